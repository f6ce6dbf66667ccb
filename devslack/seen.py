"""What each person sees in the local Slack stand-in: the bot's DM with them (thread replies and
edits included), the ephemeral messages shown to them alone, their open modals (a stack, as
Slack keeps one per person) and their App Home; ``seen_by`` hands it out as plain JSON, for a
test or for ``clarify-bot sandbox`` to show.

Posts to a click's response_url are applied here as Slack applies them: ``delete_original``
removes the message clicked, ``replace_original`` changes it in place, ``in_channel`` posts a
new message, and anything else is an ephemeral message for the person who clicked.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal

from devslack.model import APP_ID, BOT_ID, TEAM_ID, Hook, Json, Message
from devslack.state import State

MAX_STACK = 3  # views Slack keeps open at once for a person (views.push refuses a fourth)


class Seen(State):
    """What each person sees; views kept as a per-person stack."""

    def seen_by(self, user_id: str) -> Json:
        """``{"messages": [...], "modals": [...], "home": view or None}``: the DM with the bot
        and the ephemeral messages shown to the person (oldest first), their open modals (the
        bottom one first) and their App Home; plain JSON types, copied."""
        found = {"messages": self._messages_seen(user_id),
                 "modals": [self._modal_entry(view_id)
                            for view_id in self.modals.get(user_id, [])],
                 "home": self.homes.get(user_id)}
        return json.loads(json.dumps(found))

    def open_views(self, user_id: str) -> list[Json]:
        """The views a person has open, the bottom one first (as stored: id, hash, blocks …)."""
        return [self.views[view_id] for view_id in self.modals.get(user_id, [])]

    def _messages_seen(self, user_id: str) -> list[Json]:
        dm = self.dm_channel(user_id)
        shown = [_message_entry(m) for m in self.messages if m.channel == dm]
        shown += [_ephemeral_entry(e) for e in (*self.ephemerals, *self.responded)
                  if e.get("user") == user_id]
        shown.sort(key=lambda entry: Decimal(entry["ts"]))
        return shown

    def _modal_entry(self, view_id: str) -> Json:
        view = self.views[view_id]
        return {"id": view_id, "hash": view.get("hash"), "view": view,
                "errors": dict(self.view_errors.get(view_id, {}))}

    # ------------------------------------------------------------ views

    def _store_view(self, view_id: str, view: Json, *, team: str = TEAM_ID) -> Json:
        """A view as Slack keeps it: its id, a new hash, an empty state; its errors gone."""
        stored = {**view, "id": view_id, "team_id": team, "app_id": APP_ID,
                  "bot_id": BOT_ID, "hash": f"{next(self._serial)}.fakehash",
                  "root_view_id": view_id, "state": {"values": {}}}
        self.views[view_id] = stored
        self.view_errors.pop(view_id, None)
        return stored

    def _replace_view(self, view_id: str, view: Json) -> Json:
        """A view replaced in place (``views.update``, ``update``): its id and its place in
        the stack kept, a new hash."""
        old = self.views[view_id]
        stored = self._store_view(view_id, view, team=old.get("team_id", TEAM_ID))
        for key in ("previous_view_id", "root_view_id"):
            if key in old:
                stored[key] = old[key]
        return stored

    def _new_view_id(self) -> str:
        return f"V{next(self._serial):08d}"

    def _team_of(self, user_id: str | None) -> str:
        user = self.users.get(user_id or "")
        return user.team if user is not None else TEAM_ID

    def _open_modal(self, user_id: str | None, view_id: str) -> None:
        """A modal opened (``views.open``): the person's only open view."""
        if user_id is not None:
            self.modals[user_id] = [view_id]

    def _push_modal(self, user_id: str | None, view_id: str) -> None:
        """A view pushed on top of the person's open ones (``views.push``, ``push``)."""
        if user_id is None:
            return
        stack = self.modals.setdefault(user_id, [])
        stack.append(view_id)
        view = self.views[view_id]
        view["previous_view_id"] = stack[-2] if len(stack) > 1 else None
        view["root_view_id"] = stack[0]

    def _close_modal(self, user_id: str, view_id: str) -> None:
        """The view closes, and any pushed above it."""
        stack = self.modals.get(user_id, [])
        if view_id in stack:
            del stack[stack.index(view_id):]
        if not stack:
            self.modals.pop(user_id, None)

    def _modal_owner(self, view_id: str) -> str | None:
        return next((user for user, stack in self.modals.items() if view_id in stack), None)

    # ------------------------------------------------------------ response_url

    def _apply_response(self, hook: Hook, body: Json) -> None:
        """A post to a response_url, as Slack shows it."""
        text = body.get("text")
        blocks = body.get("blocks")
        if body.get("delete_original") in (True, "true") and hook.message_ts:
            if hook.ephemeral:
                self.ephemerals[:] = [e for e in self.ephemerals if not _is(e, hook)]
                self.responded[:] = [e for e in self.responded if not _is(e, hook)]
            else:
                self.messages[:] = [m for m in self.messages
                                    if (m.channel, m.ts) != (hook.channel, hook.message_ts)]
            return
        if body.get("replace_original") in (True, "true") and hook.message_ts:
            self._replace(hook, text, blocks)
            return
        ts = self._next_ts()
        if body.get("response_type") == "in_channel":
            self.messages.append(Message(hook.channel, ts, text or "", blocks or [],
                                         thread_ts=body.get("thread_ts")))
            return
        self.responded.append({"channel": hook.channel, "user": hook.user_id, "ts": ts,
                               "text": text or "", "blocks": blocks or [],
                               "thread_ts": body.get("thread_ts")})

    def _replace(self, hook: Hook, text: object, blocks: object) -> None:
        if hook.ephemeral:
            for entry in (*self.ephemerals, *self.responded):
                if _is(entry, hook):
                    entry.update(text=text if isinstance(text, str) else entry["text"],
                                 blocks=blocks if isinstance(blocks, list) else [],
                                 edits=entry.get("edits", 0) + 1)
            return
        for message in self.messages:
            if (message.channel, message.ts) == (hook.channel, hook.message_ts):
                message.text = text if isinstance(text, str) else message.text
                message.blocks = blocks if isinstance(blocks, list) else []
                message.edits += 1
                message.edited_ts = self._next_ts()


def _is(entry: Json, hook: Hook) -> bool:
    return entry.get("user") == hook.user_id and entry.get("ts") == hook.message_ts


def _message_entry(message: Message) -> Json:
    return {"channel": message.channel, "ts": message.ts, "thread_ts": message.thread_ts,
            "text": message.text, "blocks": copy.deepcopy(message.blocks),
            "metadata": message.metadata, "edits": message.edits, "ephemeral": False}


def _ephemeral_entry(entry: Json) -> Json:
    return {"channel": entry.get("channel"), "ts": entry["ts"],
            "thread_ts": entry.get("thread_ts"), "text": entry.get("text", ""),
            "blocks": copy.deepcopy(entry.get("blocks", [])), "metadata": None,
            "edits": entry.get("edits", 0), "ephemeral": True}
