"""People acting in the local Slack stand-in, sent to the bot as Slack sends them: a button (or a
date picker, a select) pressed in a message or on the App Home, a modal submitted or closed, the
App Home opened. Each is a request to the bot's request URL (``connect``), signed with Slack's v0
scheme at the stand-in's clock, form-encoded (``payload=``) for interactions and JSON for events;
the answer comes back as a ``Reply`` (HTTP status, JSON body if any).

A modal's submission is applied as Slack applies the bot's answer: an empty one closes the view,
``clear`` closes them all, ``update`` replaces it, ``push`` opens another on top, ``errors``
keeps it open with the errors shown under its inputs (``seen_by``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiohttp

from devslack import payloads
from devslack.model import TEAM_ID, Json, Message
from devslack.oauth import Distributed
from devslack.seen import Seen

EVENT_CONTENT = "application/json"
FORM_CONTENT = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Reply:
    """The bot's answer to an interaction: its HTTP status and its JSON body (None when the
    body was empty or not JSON)."""

    status: int
    body: Json | None = None


class Interacting(Seen, Distributed):
    """What a person does, posted to the bot."""

    def connect(self, request_url: str, signing_secret: str) -> None:
        """Where interactions are sent (the bot's ``/slack/events``), and the signing secret
        the bot checks them with."""
        self.request_url, self.signing_secret = request_url, signing_secret

    def who(self, user_id: str) -> Json:
        """The fields of a payload that say who acted: the user, their workspace (``team``),
        its Enterprise Grid org if it has one, whether the app is installed org-wide there."""
        user = self.users.get(user_id)
        team_id = user.team if user is not None else TEAM_ID
        name = user.name if user is not None else user_id.lower()
        workspace = self.workspaces.get(team_id)
        enterprise_id = workspace.enterprise_id if workspace is not None else None
        team: Json = {"id": team_id,
                      "domain": workspace.domain if workspace is not None else team_id.lower()}
        enterprise = None
        if enterprise_id and workspace is not None:
            org = self.workspaces.get(enterprise_id)
            org_name = org.name if org is not None else workspace.name
            team.update(enterprise_id=enterprise_id, enterprise_name=org_name)
            enterprise = {"id": enterprise_id, "name": org_name}
        return payloads.identity(
            {"id": user_id, "username": name, "name": name, "team_id": team_id}, team,
            enterprise, enterprise_install=self.installed_org_wide(enterprise_id, team_id))

    # ------------------------------------------------------------ messages

    def block_actions(self, user_id: str, *, channel: str, ts: str, action_id: str,
                      value: str | None = None, block_id: str | None = None,
                      selected_date: str | None = None,
                      selected_option: str | Json | None = None,
                      message: Message | None = None) -> Json:
        """The ``block_actions`` payload of ``user_id`` acting on element ``action_id`` of the
        message at ``channel``/``ts`` (a DM's channel, or the person's id for their DM); the
        element's block, type and label are read from the message as stored, or as
        ``message`` shows it (a copy the person still sees). A new trigger_id (theirs) and
        response_url come with it. ``LookupError`` when there is no such message or element."""
        channel = self.dm_channel(channel) if channel in self.users else channel
        shown, ephemeral = self._clicked(user_id, channel, ts, message)
        found = payloads.find_element(shown["blocks"], action_id, block_id)
        if found is None:
            raise LookupError(f"no element {action_id} in the message")
        container: Json = {"type": "message", "message_ts": ts, "channel_id": channel,
                           "is_ephemeral": ephemeral}
        if shown.get("thread_ts"):
            container["thread_ts"] = shown["thread_ts"]
        payload: Json = {
            "type": "block_actions", **self.who(user_id), "container": container,
            "trigger_id": self.new_trigger_id(user_id),
            "channel": {"id": channel,
                        "name": "directmessage" if channel.startswith("D") else channel},
            "state": {"values": {}},
            "response_url": self.new_response_url(user_id, channel, ts, ephemeral=ephemeral),
            "actions": [payloads.action(found[1], found[0], action_ts=self._action_ts(),
                                        value=value, selected_date=selected_date,
                                        selected_option=selected_option)],
        }
        if not ephemeral:  # Slack sends no copy of an ephemeral message
            payload["message"] = shown
        return payload

    async def click(self, user_id: str, *, channel: str, ts: str, action_id: str,
                    value: str | None = None, block_id: str | None = None,
                    selected_date: str | None = None,
                    selected_option: str | Json | None = None) -> Reply:
        """``user_id`` presses a button (or picks a date, an option) in a message."""
        return await self.post_interaction(self.block_actions(
            user_id, channel=channel, ts=ts, action_id=action_id, value=value,
            block_id=block_id, selected_date=selected_date, selected_option=selected_option))

    def _clicked(self, user_id: str, channel: str, ts: str, message: Message | None
                 ) -> tuple[Json, bool]:
        """The message clicked as the payload shows it, and whether it is an ephemeral one."""
        if message is None:
            message = next((m for m in self.messages
                            if m.channel == channel and m.ts == ts), None)
        if message is not None:
            return message.as_slack(with_metadata=True) | {"blocks": message.blocks}, False
        for entry in (*self.ephemerals, *self.responded):
            if entry.get("user") == user_id and entry.get("ts") == ts \
                    and entry.get("channel") == channel:
                return {"type": "message", "ts": ts, "text": entry.get("text", ""),
                        "blocks": entry.get("blocks", [])}, True
        raise LookupError(f"no message {ts} in {channel} shown to {user_id}")

    def _action_ts(self) -> str:
        return f"{self.clock.now().timestamp():.6f}"

    # ------------------------------------------------------------ the App Home

    def home_actions(self, user_id: str, *, action_id: str, value: str | None = None,
                     block_id: str | None = None, selected_date: str | None = None,
                     selected_option: str | Json | None = None) -> Json:
        """The ``block_actions`` payload of an element on the person's App Home."""
        home = self.homes.get(user_id)
        if home is None:
            raise LookupError(f"no App Home published for {user_id}")
        found = payloads.find_element(home.get("blocks", []), action_id, block_id)
        if found is None:
            raise LookupError(f"no element {action_id} on the App Home")
        return {"type": "block_actions", **self.who(user_id),
                "container": {"type": "view", "view_id": home["id"]},
                "trigger_id": self.new_trigger_id(user_id), "view": home,
                "actions": [payloads.action(found[1], found[0], action_ts=self._action_ts(),
                                            value=value, selected_date=selected_date,
                                            selected_option=selected_option)]}

    async def click_home(self, user_id: str, *, action_id: str, value: str | None = None,
                         block_id: str | None = None, selected_date: str | None = None,
                         selected_option: str | Json | None = None) -> Reply:
        """``user_id`` presses a button (or picks a date, an option) on their App Home."""
        return await self.post_interaction(self.home_actions(
            user_id, action_id=action_id, value=value, block_id=block_id,
            selected_date=selected_date, selected_option=selected_option))

    async def open_home(self, user_id: str) -> Reply:
        """``user_id`` opens the bot's App Home tab: the ``app_home_opened`` event."""
        who = self.who(user_id)
        team, enterprise = who["team"], who["enterprise"]
        fields: Json = {"user": user_id, "channel": self.dm_channel(user_id), "tab": "home"}
        if user_id in self.homes:
            fields["view"] = self.homes[user_id]
        body = self._callback("app_home_opened", team["id"],
                              enterprise["id"] if enterprise else None,
                              org_wide=who["is_enterprise_install"], **fields)
        return await self.post_event(body)

    # ------------------------------------------------------------ modals

    def view_submission(self, user_id: str, view: Json, values: Json) -> Json:
        """The ``view_submission`` payload of ``view`` with ``values`` as its
        ``state.values`` (block id → action id → element state)."""
        return payloads.view_submission(self.who(user_id), view, values,
                                        trigger_id=self.new_trigger_id(user_id))

    async def submit(self, user_id: str, *, view_id: str, values: dict[str, Any]) -> Reply:
        """``user_id`` submits their open view ``view_id`` with what they ``entered`` in its
        inputs (block id → a text, a date, an option's value); inputs left alone keep their
        initial value. The bot's answer is applied to their open views."""
        view = self._open_view(user_id, view_id)
        state = payloads.state_values(view, values)
        reply = await self.post_interaction(self.view_submission(user_id, view, state))
        self._apply_submission(user_id, view_id, reply)
        return reply

    async def close(self, user_id: str, *, view_id: str) -> Reply | None:
        """``user_id`` closes their open view ``view_id`` (and any above it; all of them for
        a view with ``clear_on_close``); the bot hears of it (``view_closed``) only if the view
        asked with ``notify_on_close``."""
        view = self._open_view(user_id, view_id)
        cleared = bool(view.get("clear_on_close"))
        reply = None
        if view.get("notify_on_close"):
            reply = await self.post_interaction(
                payloads.view_closed(self.who(user_id), view, cleared=cleared))
        if cleared:
            self.modals.pop(user_id, None)
        else:
            self._close_modal(user_id, view_id)
        return reply

    def _open_view(self, user_id: str, view_id: str) -> Json:
        if view_id not in self.modals.get(user_id, []):
            raise LookupError(f"view {view_id} is not open for {user_id}")
        return self.views[view_id]

    def _apply_submission(self, user_id: str, view_id: str, reply: Reply) -> None:
        if reply.status != 200:  # Slack shows a connection error; the view stays open
            return
        answer = reply.body or {}
        kind = answer.get("response_action")
        team = self._team_of(user_id)
        if kind == "errors":
            errors = answer.get("errors")
            self.view_errors[view_id] = dict(errors) if isinstance(errors, dict) else {}
        elif kind == "update" and isinstance(answer.get("view"), dict):
            self._replace_view(view_id, answer["view"])
        elif kind == "push" and isinstance(answer.get("view"), dict):
            pushed = self._new_view_id()
            self._store_view(pushed, answer["view"], team=team)
            self._push_modal(user_id, pushed)
        elif kind == "clear":
            self.modals.pop(user_id, None)
        else:
            self._close_modal(user_id, view_id)

    # ------------------------------------------------------------ sending

    def signed_headers(self, body: bytes, *, timestamp: str | None = None) -> dict[str, str]:
        """Slack's v0 headers for ``body``, timestamped at the stand-in's clock."""
        stamp = timestamp or str(int(self.clock.now().timestamp()))
        return {"X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": payloads.signature(self.signing_secret, stamp, body)}

    async def post_interaction(self, payload: Json) -> Reply:
        """An interaction payload, posted as Slack posts it (form-encoded, signed)."""
        return await self._post(payloads.form_body(payload), FORM_CONTENT)

    async def post_event(self, body: Json) -> Reply:
        """An Events API callback, posted as Slack posts it (JSON, signed)."""
        return await self._post(json.dumps(body).encode(), EVENT_CONTENT)

    async def _post(self, body: bytes, content_type: str) -> Reply:
        if not self.request_url:
            raise RuntimeError("no request URL: connect(request_url, signing_secret) first")
        if self._http is None:
            self._http = aiohttp.ClientSession()
        headers = {"Content-Type": content_type, **self.signed_headers(body)}
        async with self._http.post(self.request_url, data=body, headers=headers) as response:
            text = await response.text()
            return Reply(response.status, _json_object(text))


def _json_object(text: str) -> Json | None:
    try:
        found = json.loads(text) if text.strip() else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
