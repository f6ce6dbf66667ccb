"""The message catalog: every user-visible string of the cards, in the person's language.

English is the source (``cards/messages.py``); German and French come from gettext catalogs
built with Babel (``cards/locales/<language>/LC_MESSAGES/clarify.po``, compiled to the ``.mo``
read here; ``scripts/messages.py`` extracts, merges and compiles). A message is looked up by
its key, the gettext context. A language without a catalog, a message without a translation
and the spec's own texts (``spec`` in ``cards/messages.py``) are shown in English.

The words around a message's placeholders follow the message's language: a sentence shown in
English joins names with "and" and spells counts in English, inside a German card too. Dates
never depend on the catalog (``cards/dates.py`` formats them in the person's full locale).
"""

from __future__ import annotations

import gettext
import re
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from babel.messages.mofile import read_mo

from cards import reach_messages  # noqa: F401 (its messages join MESSAGES)
from cards.messages import MESSAGES, Message
from cards.untrusted import Runs, fill

LOCALES_DIR = Path(__file__).with_name("locales")
DOMAIN = "clarify"
FALLBACK_LANGUAGE = "en"
# the languages with a catalog (English is the source, written in cards/messages.py)
LANGUAGES = ("en", "de", "fr")
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")


class MissingMessageError(KeyError):
    """A key is not in cards/messages.py (a programming error)."""


@dataclass(frozen=True)
class _Language:
    translations: gettext.NullTranslations
    translated: frozenset[str]  # the keys this language's catalog translates


@cache
def _load_language(language: str, directory: Path = LOCALES_DIR) -> _Language | None:
    # The language is validated first so that a locale tag can never name another file.
    if language == FALLBACK_LANGUAGE or not _LANGUAGE.match(language):
        return None
    path = directory / language / "LC_MESSAGES" / f"{DOMAIN}.mo"
    if not path.is_file():
        return None
    with path.open("rb") as mo:
        translations = gettext.GNUTranslations(mo)
    with path.open("rb") as mo:
        catalog = read_mo(mo)
    translated = frozenset(_decoded(message.context) for message in catalog
                           if message.id and message.context and _filled(message.string))
    return _Language(translations=translations, translated=translated)


def _decoded(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _filled(value: object) -> bool:
    return all(value) if isinstance(value, tuple) else bool(value)


def language_of(locale_tag: str) -> str:
    """The catalog language for a locale tag such as ``en-GB`` or ``de_AT``."""
    return locale_tag.replace("-", "_").split("_", 1)[0].lower()


def placeholders(template: str) -> set[str]:
    """The ``{name}`` fields a template uses."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


def message(key: str) -> Message:
    try:
        return MESSAGES[key]
    except KeyError:
        raise MissingMessageError(key) from None


@dataclass(frozen=True)
class Catalog:
    """Messages for one locale, with English behind every message it does not translate."""

    locale_tag: str
    language: _Language | None = None

    def translates(self, key: str) -> bool:
        """True when ``key`` is shown in the person's language rather than in English."""
        entry = message(key)
        return (self.language is not None and not entry.spec
                and key in self.language.translated)

    def words_locale(self, key: str) -> str:
        """The locale for the words filled into ``key`` (joined names): the person's when the
        message is in their language, else English (the person's own English if they read
        English, as ``en-US``)."""
        if self.translates(key) or language_of(self.locale_tag) == FALLBACK_LANGUAGE:
            return self.locale_tag
        return FALLBACK_LANGUAGE

    def template(self, key: str) -> str:
        """The message for ``key`` with its placeholders unfilled."""
        entry = message(key)
        if self.language is not None and self.translates(key):
            return self.language.translations.pgettext(key, entry.english)
        return entry.english

    def text(self, key: str, /, **values: object) -> str:
        """The message for ``key`` with its placeholders filled."""
        template = self.template(key)
        return template.format_map(values) if values else template

    def runs(self, key: str, /, **values: object) -> Runs:
        """The message for ``key`` as runs (``cards.untrusted.fill``): a link filled into it
        stays a link, so each renderer writes it its own way and the words as text."""
        return fill(self.template(key), values)

    def plural(self, key: str, count: int, /, **values: object) -> str:
        """The plural form of ``key`` for ``count`` (the catalog's plural rule; English: one
        for 1, other otherwise), with ``{count}`` filled."""
        entry = message(key)
        if entry.plural is None:
            raise MissingMessageError(f"{key} (not a plural)")
        template = entry.english if count == 1 else entry.plural
        if self.language is not None and self.translates(key):
            template = self.language.translations.npgettext(key, entry.english, entry.plural,
                                                            count)
        return template.format_map({"count": count, **values})

    def count_word(self, count: int, *, for_key: str | None = None) -> str:
        """A small count in words ("two"), or digits where the catalog has no word; in the
        language of ``for_key``'s message, when given (an English sentence says "two")."""
        key = f"number.{count}"
        if key not in MESSAGES:
            return str(count)
        if for_key is not None and not self.translates(for_key):
            return message(key).english
        return self.text(key)

    def has(self, key: str) -> bool:
        return key in MESSAGES


def catalog_for(locale_tag: str, *, directory: Path = LOCALES_DIR) -> Catalog:
    """The catalog for a person's locale; languages without a catalog get English."""
    return Catalog(locale_tag=locale_tag,
                   language=_load_language(language_of(locale_tag), directory))
