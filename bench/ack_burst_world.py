"""The world of bench/ack_burst.py: a generated scenario, signed clicks, and the two servers
that run in their own processes (the bare bolt app, the fake Slack Web API)."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

SECRET = "bench-signing-secret-0123456789abcdef"
ACTION_KEY = "bench-action-signing-key-0123456789abcdef"
CLARIFY_TOKEN = "bench-clarify-token"
DEV_TOKEN = "bench-dev-token"
BOT_TOKEN = "xoxb-fake-bot-token"  # the fake Slack's
TEAM = "T0BENCH"


def serve_bare(port: int, slack_url: str) -> None:
    """(b): a bolt AsyncApp on aiohttp whose only listener acknowledges (bolt's defaults; its
    Web API client, like the bot's, points at the fake Slack for bolt's one auth.test)."""
    from aiohttp import web
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack_url)
    app = AsyncApp(signing_secret=SECRET, client=client)

    @app.action(re.compile(".*"))
    async def ack_only(ack: Any) -> None:
        await ack()

    web.run_app(app.web_app(path="/slack/events"), host="127.0.0.1", port=port,
                access_log=None, print=None)


def serve_fake_slack(people: int) -> None:
    from devslack import LocalSlack

    async def main() -> None:
        async with LocalSlack() as slack:
            for n in range(people):
                slack.add_user(_user(n))
            print(slack.url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())


# ---------------------------------------------------------------- the scenario


def _user(n: int) -> str:
    return f"U0B{n:05d}"


def scenario(clarifications: int, people: int, *, binding: bool = True) -> dict[str, Any]:
    """One tenant, one workspace, verified people, and the clarifications they answer:
    ``binding``, editors (an answer settles the question); else viewers (every answer is an
    attestation, none binds)."""
    role = "editor" if binding else "viewer"
    persons = [{"id": f"p-{n}", "tenant": "bench", "display_name": f"Person {n}",
                "memberships": [{"workspace": "bench-ws", "role": role}],
                "slack": [{"user_id": _user(n), "team_id": TEAM}]} for n in range(people)]
    items = [{
        "tenant_id": "bench", "workspace_id": "bench-ws", "target": f"fact-{n}",
        "question": "When does the lease renewal take effect?", "kind": "relative_date",
        "detector_confidence": 0.9, "applied_candidate_confidence": 0.5,
        "candidates": [{"label": "next quarter", "valid_from": "2026-07-01T00:00:00Z"},
                       {"label": "next year", "valid_from": "2027-01-01T00:00:00Z"}],
        "authority": {"authored_by": ["p-0"]},
        "document": {"document_id": f"doc-{n}", "title": f"Lease {n}",
                     "url": f"https://docs.bench.example/{n}", "content_hash": f"sha256:{n:08x}",
                     "acl": {"workspace_id": "bench-ws",
                             "read_roles": ["viewer", "editor", "steward"]}},
        "span": {"start": 0, "end": 10, "text": "next quarter"},
    } for n in range(clarifications)]
    return {
        "name": "ack-burst", "tenants": [{"id": "bench", "name": "Bench"}],
        "workspaces": [{"id": "bench-ws", "tenant": "bench", "name": "Leases",
                        "steward": "p-0"}],
        "people": persons, "dev": {"tokens": [DEV_TOKEN]},
        "tokens": [{"token": CLARIFY_TOKEN, "audience": "clarify", "tenants": ["bench"]}],
        "clarifications": items,
    }


def toml(data: dict[str, Any]) -> str:
    """The scenario as TOML (inline tables on one line each; strings as JSON writes them)."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return json.dumps(v)

    return "".join(f"{key} = {value(v)}\n" for key, v in data.items())


# ---------------------------------------------------------------- clicks


@dataclass(frozen=True, slots=True)
class Click:
    clarification_id: str
    user: int
    candidate: int


def signed(click: Click, *, codec: Any, stamp: str, acted: float) -> tuple[bytes, dict[str, str]]:
    from cards.actions import ActionKind, ActionRef

    value = codec.encode(ActionRef(kind=ActionKind.ANSWER, card_ref=f"d.{click.clarification_id}",
                                   clarification_id=click.clarification_id,
                                   candidate=click.candidate))
    return signed_action(user=_user(click.user), team=TEAM, secret=SECRET, value=value,
                         action_id=f"clarify.answer.{click.candidate}", stamp=stamp, acted=acted)


def signed_action(*, user: str, team: str, secret: str, value: str, action_id: str, stamp: str,
                  acted: float, message_ts: str = "1.000100") -> tuple[bytes, dict[str, str]]:
    """A block_actions request for one button press, signed as Slack signs it."""
    payload = {
        "type": "block_actions", "user": {"id": user, "team_id": team}, "team": {"id": team},
        "api_app_id": "A0BENCH", "trigger_id": "1.2.3",
        "container": {"type": "message", "channel_id": f"D{user}", "message_ts": message_ts},
        "channel": {"id": f"D{user}"},
        "actions": [{"type": "button", "action_id": action_id,
                     "block_id": "answers", "value": value, "action_ts": f"{acted:.6f}"}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    return body, {"Content-Type": "application/x-www-form-urlencoded",
                  "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature or ""}
