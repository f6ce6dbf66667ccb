"""The cards' gettext catalogs, built with Babel: extract, merge, compile, check.

    .venv/bin/python scripts/messages.py update   # cards/messages.py -> clarify.pot -> each .po
    .venv/bin/python scripts/messages.py compile  # each .po -> its .mo (committed)
    .venv/bin/python scripts/messages.py check    # exit 1 when a .pot, .po or .mo is stale

``update`` extracts the calls of ``cards/messages.py`` (Babel's Python extractor, the same one
``pybabel extract`` runs) into ``cards/locales/clarify.pot`` and merges the template into each
language's ``clarify.po`` (as ``pybabel update`` does): new messages arrive untranslated,
changed English is marked fuzzy, removed messages become obsolete. Translate, then ``compile``.
The spec's texts (``spec``/``spec_plural``) get a note and stay untranslated on purpose.
"""

from __future__ import annotations

import io
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_python
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT / "cards" / "messages.py", ROOT / "cards" / "reach_messages.py")
LOCALES = ROOT / "cards" / "locales"
TEMPLATE = LOCALES / "clarify.pot"
LANGUAGES = ("de", "fr")
DOMAIN = "clarify"
# Reproducible files: a fixed date in every header, so `check` compares bytes.
FIXED_DATE = datetime(2026, 12, 1, tzinfo=UTC)
KEYWORDS = {"message": ((1, "c"), 2), "spec": ((1, "c"), 2),
            "plural": ((1, "c"), 2, 3), "spec_plural": ((1, "c"), 2, 3)}
SPEC_NOTE = "spec text: shown in English in every locale (docs/cards.md); leave untranslated"


def po_path(language: str) -> Path:
    return LOCALES / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def template() -> Catalog:
    """The catalog template extracted from cards/messages.py and cards/reach_messages.py
    (Babel's Python extractor)."""
    catalog = Catalog(project="clarify-bot", domain=DOMAIN, fuzzy=False,
                      header_comment="# The cards' messages, extracted from cards/messages.py.")
    for path in SOURCES:
        where = path.relative_to(ROOT).as_posix()
        with path.open("rb") as source:
            calls: list[Any] = list(extract_python(source, KEYWORDS, ["TRANSLATORS:"], {}))
        for lineno, function, args, comments in calls:
            name = str(function)
            key, *english = args if isinstance(args, tuple) else (args,)
            if len(english) != len(KEYWORDS[name]) - 1 or not all(english) or not key:
                raise SystemExit(f"{where}:{lineno}: {name}() needs literal text")
            notes = [*comments, SPEC_NOTE] if name.startswith("spec") else list(comments)
            catalog.add(english[0] if len(english) == 1 else tuple(english),
                        locations=[(where, lineno)], auto_comments=notes, context=key)
    return catalog


def _dump_po(catalog: Catalog, **options: object) -> bytes:
    out = io.BytesIO()
    write_po(out, catalog, width=100, omit_header=False, **options)  # type: ignore[arg-type]
    return out.getvalue()


def _dump_mo(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_mo(out, catalog)
    return out.getvalue()


def merged(language: str, pot: Catalog) -> Catalog:
    """The language's .po merged with the template (pybabel update)."""
    path = po_path(language)
    if path.is_file():
        with path.open("rb") as existing:
            catalog = read_po(existing, locale=language, domain=DOMAIN)
    else:
        catalog = Catalog(locale=language, domain=DOMAIN, project="clarify-bot", fuzzy=False)
    catalog.update(pot, no_fuzzy_matching=True, update_header_comment=False)
    catalog.obsolete.clear()  # removed messages leave with the English (git keeps the history)
    catalog.revision_date = catalog.creation_date = FIXED_DATE
    catalog.fuzzy = False
    return catalog


def compiled(language: str) -> bytes:
    with po_path(language).open("rb") as po:
        return _dump_mo(read_po(po, locale=language, domain=DOMAIN))


def _fix_dates(catalog: Catalog) -> Catalog:
    catalog.creation_date = catalog.revision_date = FIXED_DATE
    return catalog


def expected_files() -> dict[Path, bytes]:
    """Every generated file as it should be, from cards/messages.py and the .po files."""
    pot = _fix_dates(template())
    files = {TEMPLATE: _dump_po(pot, sort_output=False, include_lineno=True)}
    for language in LANGUAGES:
        files[po_path(language)] = _dump_po(merged(language, pot), include_lineno=False)
    return files


def expected_mo() -> dict[Path, bytes]:
    return {po_path(language).with_suffix(".mo"): compiled(language) for language in LANGUAGES}


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "check"
    if command == "update":
        for path, data in expected_files().items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return 0
    if command == "compile":
        for path, data in expected_mo().items():
            path.write_bytes(data)
        return 0
    if command == "check":
        stale = [path for path, data in {**expected_files(), **expected_mo()}.items()
                 if not path.is_file() or path.read_bytes() != data]
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)} (run scripts/messages.py update, compile)")
        return 1 if stale else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
