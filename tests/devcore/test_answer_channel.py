"""Answer provenance over HTTP: only the clarify audience asserts a channel and a message ref.

Spec §7: CLI and API-key answers are recorded with channel "cli". An API key may leave the
channel out or say "cli" (or "api", the request's default); claiming a chat channel or a message
reference is 403 RESPONDER_ASSERTION_FORBIDDEN with nothing recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import AnswerRequest, Role
from bot.core.models import Channel as ContractChannel

CRITICAL = "clr-00001"
SARAH = "acme-key-sarah-editor"


@pytest.mark.parametrize("claim", [
    {"channel": ContractChannel.SLACK},
    {"channel": ContractChannel.TEAMS},
    {"message_ref": "slack:T0ACME:D0SARAH:1720086120.000200"},
    {"channel": ContractChannel.CLI, "message_ref": "cli:1"},
])
async def test_an_api_key_claiming_chat_provenance_is_refused(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient], claim: dict[str, Any]
) -> None:
    """A key cannot say its answer came from a Slack or Teams message: 403, nothing recorded."""
    with pytest.raises(e.ResponderAssertionForbidden):
        await client_for(SARAH).answer_clarification(
            clarification_id=CRITICAL, request=AnswerRequest(answer_index=0, **claim))
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert c.responses == [] and [ev.type for ev in c.events] == ["created"]


@pytest.mark.parametrize("channel", [None, "cli", "api"])
async def test_an_api_key_answer_is_recorded_with_channel_cli(
    bot_client: CoreClient, core_url: str, channel: str | None
) -> None:
    """Channel left out, "cli" or "api": the response says cli and carries no message ref."""
    body: dict[str, Any] = {"answerIndex": 0}
    if channel is not None:
        body["channel"] = channel
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post(f"/v1/clarifications/{CRITICAL}/answer", json=body,
                                   headers={"Authorization": f"Bearer {SARAH}"})
    assert response.status_code == 202
    [record] = (await bot_client.get_clarification(clarification_id=CRITICAL)).responses
    assert (record.responder, record.channel, record.message_ref) == (
        "p-sarah", ContractChannel.CLI, None)


async def test_the_clarify_audience_records_the_channel_and_message_it_verified(
    bot_client: CoreClient,
) -> None:
    """The bot verified the callback, so its channel and message ref are recorded as sent."""
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=AnswerRequest(
        answer_index=0, responder="p-ahmed", rights=Role.EDITOR, channel=ContractChannel.TEAMS,
        message_ref="teams:conv-1:act-2"))
    [record] = (await bot_client.get_clarification(clarification_id=CRITICAL)).responses
    assert (record.channel, record.message_ref) == (ContractChannel.TEAMS, "teams:conv-1:act-2")
