"""The message catalog: every user-visible string of the cards, keyed, per locale.

Messages live in ``cards/locales/<language>.json`` as flat ``key -> template`` maps with
``{name}`` placeholders. English is complete and is the fallback for any key a locale lacks.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from babel import Locale, UnknownLocaleError

LOCALES_DIR = Path(__file__).with_name("locales")
FALLBACK_LANGUAGE = "en"
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")


class MissingMessageError(KeyError):
    """A key is in no catalog, not even the English one (a programming error)."""


@cache
def _load_language(language: str, directory: Path = LOCALES_DIR) -> dict[str, str]:
    # The language is validated first so that a locale tag can never name another file.
    if not _LANGUAGE.match(language):
        return {}
    path = directory / f"{language}.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in data.items()}


def language_of(locale_tag: str) -> str:
    """The catalog language for a locale tag such as ``en-GB`` or ``de_AT``."""
    return locale_tag.replace("-", "_").split("_", 1)[0].lower()


def placeholders(template: str) -> set[str]:
    """The ``{name}`` fields a template uses."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


@dataclass(frozen=True)
class Catalog:
    """Messages for one locale, with English behind every missing key."""

    locale_tag: str
    messages: dict[str, str]
    fallback: dict[str, str]

    def text(self, key: str, /, **values: object) -> str:
        """The message for ``key`` with its placeholders filled."""
        template = self.messages.get(key) or self.fallback.get(key)
        if template is None:
            raise MissingMessageError(key)
        return template.format_map(values) if values else template

    def plural(self, key: str, count: int, /, **values: object) -> str:
        """The plural form of ``key`` for ``count`` (CLDR rules), e.g. ``key.one``."""
        form = self.plural_form(count)
        chosen = f"{key}.{form}"
        if chosen not in self.messages and chosen not in self.fallback:
            chosen = f"{key}.other"
        return self.text(chosen, count=count, **values)

    def plural_form(self, count: int) -> str:
        try:
            return Locale.parse(self.locale_tag.replace("-", "_")).plural_form(count)
        except (UnknownLocaleError, ValueError):
            return "one" if count == 1 else "other"

    def count_word(self, count: int) -> str:
        """A small count in words ("two"), or digits where the catalog has no word."""
        key = f"number.{count}"
        if key in self.messages or key in self.fallback:
            return self.text(key)
        return str(count)

    def has(self, key: str) -> bool:
        return key in self.messages or key in self.fallback


def catalog_for(locale_tag: str, *, directory: Path = LOCALES_DIR) -> Catalog:
    """The catalog for a person's locale; unknown languages get English."""
    fallback = _load_language(FALLBACK_LANGUAGE, directory)
    messages = _load_language(language_of(locale_tag), directory)
    return Catalog(locale_tag=locale_tag, messages=messages, fallback=fallback)
