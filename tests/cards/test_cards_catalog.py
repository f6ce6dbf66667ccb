"""The message catalog: complete, consistent placeholders, plural rules and locale fallback."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from bot.core.models import ReasonCode, Severity
from cards.catalog import LOCALES_DIR, MissingMessageError, catalog_for, placeholders

CARDS = Path(__file__).resolve().parents[2] / "cards"


def _literal_keys() -> set[str]:
    keys: set[str] = set()
    for path in CARDS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in {"text", "plural"}:
                if node.args and isinstance(node.args[0], ast.Constant):
                    keys.add(str(node.args[0].value))
    return keys


def test_every_key_the_renderers_use_is_in_english() -> None:
    """Each literal catalog key in cards/ exists in en.json (plural keys as .one/.other)."""
    english = json.loads((LOCALES_DIR / "en.json").read_text())
    missing = {k for k in _literal_keys()
               if k not in english and f"{k}.other" not in english}
    assert _literal_keys() and not missing


def test_every_reason_code_and_severity_has_plain_words() -> None:
    """Every ReasonCode and Severity of the core has a catalog sentence."""
    cat = catalog_for("en")
    for code in ReasonCode:
        assert len(cat.text(f"reason.{code.value}")) > 20
    for severity in Severity:
        assert cat.text(f"severity.{severity.value}")


def test_other_locales_use_the_same_placeholders(tmp_path: Path) -> None:
    """A translated message is used, and missing keys fall back to English."""
    (tmp_path / "en.json").write_text((LOCALES_DIR / "en.json").read_text())
    (tmp_path / "de.json").write_text(json.dumps({"custom.submit": "Antwort senden"}))
    cat = catalog_for("de-AT", directory=tmp_path)
    assert cat.text("custom.submit") == "Antwort senden"
    assert cat.text("custom.cancel") == "Cancel"


def test_shipped_locales_match_english_placeholders() -> None:
    """Every shipped locale only has English keys, each with the same placeholders."""
    english = json.loads((LOCALES_DIR / "en.json").read_text())
    for path in LOCALES_DIR.glob("*.json"):
        for key, template in json.loads(path.read_text()).items():
            assert key in english, (path.name, key)
            assert placeholders(template) == placeholders(english[key]), (path.name, key)


def test_unknown_locale_and_path_like_tags_get_english() -> None:
    """Unknown languages and tags that look like paths fall back to English."""
    for tag in ("xx-YY", "../../etc/passwd", "", "en_US"):
        assert catalog_for(tag).text("custom.submit") == "Send answer"


def test_plural_forms_follow_cldr() -> None:
    """Plural messages choose .one/.other by the locale's CLDR rules."""
    cat = catalog_for("en")
    assert cat.plural("outcome.remaining", 1).startswith("One more confirmation is")
    assert cat.plural("outcome.remaining", 3).startswith("3 more confirmations are")


def test_count_words_and_missing_keys() -> None:
    """Small counts are spelled out, large ones are digits, unknown keys raise."""
    cat = catalog_for("en")
    assert (cat.count_word(2), cat.count_word(3), cat.count_word(42)) == ("two", "three", "42")
    with pytest.raises(MissingMessageError):
        cat.text("no.such.key")
