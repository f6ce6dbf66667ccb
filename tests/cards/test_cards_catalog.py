"""The message catalog: gettext catalogs built with Babel, complete in German and French, the
spec's texts in English, placeholders kept, plural rules and the fallback for other languages."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from bot.core.models import ReasonCode, Severity
from cards.catalog import LOCALES_DIR, MissingMessageError, catalog_for, placeholders
from cards.messages import MESSAGES

ROOT = Path(__file__).resolve().parents[2]
CARDS = ROOT / "cards"
TRANSLATED = ("de", "fr")


def _literal_keys() -> set[str]:
    keys: set[str] = set()
    for path in CARDS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in {"text", "plural"}:
                if node.args and isinstance(node.args[0], ast.Constant):
                    keys.add(str(node.args[0].value))
    return keys


def _po(language: str):
    path = LOCALES_DIR / language / "LC_MESSAGES" / "clarify.po"
    with path.open("rb") as po:
        return read_po(po, locale=language)


def test_every_key_the_renderers_use_is_a_message() -> None:
    """Each literal catalog key in cards/ is declared in cards/messages.py."""
    assert _literal_keys() and not _literal_keys() - set(MESSAGES)


def test_every_reason_code_and_severity_has_plain_words() -> None:
    """Every ReasonCode and Severity of the core has a sentence in each language."""
    for locale in ("en", "de", "fr"):
        cat = catalog_for(locale)
        for code in ReasonCode:
            assert len(cat.text(f"reason.{code.value}")) > 20
        for severity in Severity:
            assert cat.text(f"severity.{severity.value}")


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_message_is_translated_with_the_same_placeholders(language: str) -> None:
    """German and French translate every message of cards/messages.py but the spec's texts,
    each with exactly the English placeholders (a plural's singular may leave out {count}),
    nothing fuzzy, nothing obsolete, nothing the English does not have."""
    catalog = _po(language)
    entries = {m.context: m for m in catalog if m.id}
    assert set(entries) == set(MESSAGES)
    assert not catalog.obsolete
    for key, source in MESSAGES.items():
        entry = entries[key]
        assert not entry.fuzzy, key
        english = (source.english, source.plural) if source.plural else (source.english,)
        assert (entry.id if isinstance(entry.id, tuple) else (entry.id,)) == english, key
        forms = entry.string if isinstance(entry.string, tuple) else (entry.string,)
        if source.spec:
            assert not any(forms), f"{key} is the spec's text: it stays English"
            continue
        assert all(forms), f"{language}: {key} is not translated"
        for n, form in enumerate(forms):
            want = placeholders(english[-1] if n else english[0])
            assert placeholders(form) - {"count"} == want - {"count"}, (language, key, form)
            if n:
                assert "count" in placeholders(form), (language, key, form)


def test_compiled_catalogs_are_up_to_date() -> None:
    """The committed clarify.pot, .po and .mo files are what scripts/messages.py builds now from
    cards/messages.py (Babel's extractor and compiler): nothing stale ships."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "messages.py"), "check"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


# The card sentences the spec quotes (§7), with its sample values.
SPEC_SENTENCES = [
    "✓ Recorded as evidence: 12 June, confirmed by Sarah, 4 Jul 2026.",
    "This clarification affects a high-stakes date and requires two confirmations.",
    "First confirmation recorded: 12 June (Sarah). One more confirmation is required before the "
    "correction becomes binding.",
    "✓ Recorded as binding evidence: 12 June, confirmed by Sarah and Ahmed, 4 Jul 2026.",
    "Your answer is recorded as an attestation. A steward or editor must confirm it before the "
    "fact is corrected.",
    "A conflicting answer has been recorded. This clarification now requires steward review.",
]


@pytest.mark.parametrize("locale", ["en", "de-DE", "fr-FR"])
def test_spec_texts_are_word_for_word_english_in_every_locale(locale: str) -> None:
    """The outcome sentences the spec quotes read word for word in every locale, only the dates
    in the person's own format (and "Something else…" on the button)."""
    cat = catalog_for(locale)
    rendered = [
        cat.text("outcome.recorded", answer="12 June", names="Sarah", date="4 Jul 2026"),
        cat.text("question.notice.critical",
                 count=cat.count_word(2, for_key="question.notice.critical")),
        cat.text("outcome.first_confirmation", answer="12 June", names="Sarah") + " "
        + cat.plural("outcome.remaining", 1),
        cat.text("outcome.binding", answer="12 June", names="Sarah and Ahmed",
                 date="4 Jul 2026"),
        cat.text("outcome.attestation"),
        cat.text("outcome.conflict")]
    assert rendered == SPEC_SENTENCES
    assert cat.text("question.something_else") == "Something else…"
    assert cat.text("outcome.moved_on").lower().startswith("this clarification has moved on")


def test_a_translated_message_is_used_and_the_spec_text_is_not() -> None:
    """A German person gets German for ordinary messages and the spec's English sentence."""
    de = catalog_for("de-AT")
    assert de.text("custom.submit") == "Antwort senden"
    assert de.text("question.something_else") == "Something else…"
    assert de.translates("custom.submit") and not de.translates("outcome.recorded")
    assert catalog_for("fr-CA").text("custom.cancel") == "Annuler"


def test_unknown_locale_and_path_like_tags_get_english() -> None:
    """Languages without a catalog and tags that look like paths fall back to English."""
    for tag in ("xx-YY", "es-ES", "../../etc/passwd", "", "en_US", "de/../fr"):
        assert catalog_for(tag).text("custom.submit") == "Send answer"


def test_plural_forms_follow_each_catalog() -> None:
    """Plural messages choose their form by the language's rule: French counts 0 as singular."""
    cat = catalog_for("en")
    assert cat.plural("outcome.remaining", 1).startswith("One more confirmation is")
    assert cat.plural("outcome.remaining", 3).startswith("3 more confirmations are")
    de, fr = catalog_for("de"), catalog_for("fr")
    assert de.plural("digest.more", 1) == "Eine weitere Frage wartet."
    assert de.plural("digest.more", 0) == "0 weitere Fragen warten."
    assert fr.plural("digest.more", 0) == "Une autre question attend."
    assert fr.plural("digest.more", 2) == "2 autres questions attendent."


def test_count_words_follow_the_sentence_language() -> None:
    """Small counts are spelled out in the sentence's language, large ones are digits, unknown
    keys raise."""
    cat = catalog_for("en")
    assert (cat.count_word(2), cat.count_word(3), cat.count_word(42)) == ("two", "three", "42")
    de = catalog_for("de-DE")
    assert de.count_word(2, for_key="question.notice.quorum") == "zwei"
    assert de.count_word(2, for_key="question.notice.critical") == "two"  # the spec's English
    with pytest.raises(MissingMessageError):
        cat.text("no.such.key")
