"""A modal's field errors are in the language it was drawn in: the bot writes the person's locale
into the view's private_metadata beside its signed reference, and reads it back only when it
looks like a locale (the metadata returns from the client, so nothing else is taken from it)."""

from __future__ import annotations

import json

import pytest

from adapters.slack import payloads
from adapters.slack.forms import _errors
from cards.actions import ActionCodec, ActionKind, ActionRef, custom_input_ids
from cards.text import custom_error_text
from cards.views import CustomError, Viewer

CODEC = ActionCodec(b"modal locale tests: action signing key")


def _submission(meta: dict[str, object]) -> payloads.Submission:
    token = CODEC.encode(ActionRef(kind=ActionKind.CUSTOM_SUBMIT, card_ref="d.x",
                                   clarification_id="clr-1"))
    view = {"type": "modal", "callback_id": "clarify.custom",
            "private_metadata": json.dumps({"t": token, **meta}), "state": {"values": {}}}
    return payloads.submission({"type": "view_submission", "view": view,
                                "user": {"id": "U0SARAH", "team_id": "T0ACME"},
                                "team": {"id": "T0ACME"}}, CODEC)


@pytest.mark.parametrize(("given", "read"), [
    ("fr-FR", "fr-FR"), ("de", "de"), ("pt_BR", "pt_BR"), ("zh-Hant-TW", "zh-Hant-TW"),
    (None, None), ("", None), ("<b>fr</b>", None), ("fr-FR; rm -rf", None), (7, None),
    ("x" * 40, None),
])
def test_the_modal_locale_is_read_only_when_it_is_a_locale(given: object, read: str | None
                                                           ) -> None:
    meta = {} if given is None else {"l": given}
    assert _submission(meta).locale == read


def test_a_field_error_is_in_the_modals_language() -> None:
    ids = custom_input_ids(0)
    english = _errors(CustomError.END_BEFORE_START, ids, None)
    german = _errors(CustomError.END_BEFORE_START, ids, "de-DE")
    assert list(english) == list(german) == [ids.end]
    assert english[ids.end] != german[ids.end]
    assert german[ids.end] == custom_error_text(CustomError.END_BEFORE_START,
                                                Viewer(locale="de-DE"))
