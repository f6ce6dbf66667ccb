"""The Web API methods the local Slack stand-in answers, as Slack answers them: auth, DMs and
history, messages (posted, updated, ephemeral), modals and the App Home, users (their status
and Do Not Disturb among them).

Each handler takes the decoded arguments and returns the body's fields (``ok`` is added by the
server) or raises ``SlackError``; what a person sees is recorded as they would see it
(``devslack.seen``).
"""

from __future__ import annotations

from decimal import Decimal

from devslack import checks
from devslack.errors import SlackError
from devslack.model import BOT_ID, BOT_USER_ID, TEAM_ID, TRIGGER_TTL, Handler, Json, Message
from devslack.seen import MAX_STACK, Seen


class WebApi(Seen):
    """The Web API's handlers, by method name."""

    def _web_api(self) -> dict[str, Handler]:
        return {
            "auth.test": self._auth_test,
            "auth.revoke": self._auth_revoke,
            "apps.connections.open": self._connections_open,
            "conversations.open": self._conversations_open,
            "conversations.history": self._conversations_history,
            "conversations.info": self._conversations_info,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "views.open": self._views_open,
            "views.push": self._views_push,
            "views.update": self._views_update,
            "views.publish": self._views_publish,
            "users.info": self._users_info,
            "users.list": self._users_list,
            "users.lookupByEmail": self._users_lookup_by_email,
            "dnd.info": self._dnd_info,
            "dnd.teamInfo": self._dnd_team_info,
        }

    # ------------------------------------------------------------ auth

    def _auth_revoke(self, args: Json) -> Json:
        """The calling token is revoked (Slack's ``auth.revoke``; ``test=true`` only says so)."""
        issued = self.issued.get(self._token or "")
        if checks.flag(args.get("test")):
            return {"revoked": False}
        if issued is not None:
            issued.revoked = True
        else:  # the single-workspace token
            self.tokens = self.tokens - {self._token or ""}
        return {"revoked": True}

    def _auth_test(self, args: Json) -> Json:
        workspace = self.workspaces.get(self._team)
        if workspace is not None:
            return {"url": "https://fake.slack.com/", "team": workspace.name, "user": "clarify",
                    "team_id": workspace.team_id or workspace.enterprise_id,
                    "enterprise_id": workspace.enterprise_id, "user_id": BOT_USER_ID,
                    "bot_id": BOT_ID, "is_enterprise_install": workspace.org_wide}
        return {"url": "https://fake.slack.com/", "team": "Fake Workspace", "user": "clarify",
                "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID,
                "is_enterprise_install": False}

    def _connections_open(self, args: Json) -> Json:
        if not self.socket_url:
            raise SlackError("internal_error", status=500)
        return {"url": self.socket_url}

    # ------------------------------------------------------------ conversations

    def _conversations_open(self, args: Json) -> Json:
        users = args.get("users")
        ids = users.split(",") if isinstance(users, str) else list(users or [])
        if not ids and args.get("channel"):
            return {"channel": {"id": self._channel(args)}}
        if not ids:
            raise SlackError("users_list_not_supplied")
        if len(ids) > 1:
            raise SlackError("invalid_arguments", messages=["the stand-in opens 1:1 DMs only"])
        user = self._user(ids[0].strip())
        if user.deleted:
            raise SlackError("user_disabled")
        if user.is_bot:
            raise SlackError("cannot_dm_bot")
        channel = self.dm_channel(user.id)
        already_open = channel in self.channels
        self.channels.add(channel)
        return {"no_op": already_open, "already_open": already_open,
                "channel": {"id": channel, "is_im": True, "user": user.id}}

    def _conversations_info(self, args: Json) -> Json:
        channel = self._channel(args)
        for user in self.users.values():
            if self.dm_channel(user.id) == channel:
                return {"channel": {"id": channel, "is_im": True, "user": user.id}}
        return {"channel": {"id": channel, "is_im": False}}

    def _conversations_history(self, args: Json) -> Json:
        channel = self._channel(args)
        limit = max(1, min(999, int(args.get("limit") or 100)))
        inclusive = checks.flag(args.get("inclusive"))
        oldest = Decimal(str(args.get("oldest") or "0"))
        latest = Decimal(str(args.get("latest") or "1e12"))
        cursor = args.get("cursor")
        if cursor:
            latest, inclusive = Decimal(str(cursor)), False

        def within(ts: Decimal) -> bool:
            if inclusive:
                return oldest <= ts <= latest
            return oldest < ts < latest

        # as Slack: the channel's own messages, and of thread replies only those broadcast
        found = [m for m in self.messages_in(channel) if within(Decimal(m.ts))
                 and (not m.thread_ts or m.thread_ts == m.ts or m.broadcast)]
        found.sort(key=lambda m: Decimal(m.ts), reverse=True)
        page, has_more = found[:limit], len(found) > limit
        with_metadata = checks.flag(args.get("include_all_metadata"))
        return {"messages": [m.as_slack(with_metadata=with_metadata) for m in page],
                "has_more": has_more, "pin_count": 0,
                "response_metadata": {"next_cursor": page[-1].ts if has_more else ""}}

    # ------------------------------------------------------------ messages

    def _post_message(self, args: Json) -> Json:
        channel = self._channel(args)
        text, blocks = checks.content(args)
        thread = args.get("thread_ts")
        if thread and not any(m.ts == thread for m in self.messages_in(channel)):
            raise SlackError("thread_not_found")
        message = Message(channel, self._next_ts(), text or "", blocks or [],
                          checks.metadata_of(args), thread, team=self._team,
                          broadcast=bool(thread) and checks.flag(args.get("reply_broadcast")))
        self.messages.append(message)
        return {"channel": channel, "ts": message.ts,
                "message": message.as_slack(with_metadata=True)}

    def _update(self, args: Json) -> Json:
        channel = self._channel(args)
        message = self._message(channel, checks.required(args, "ts"))
        text, blocks = checks.content(args)
        metadata = checks.metadata_of(args)
        if text is not None:
            message.text = text
        if blocks is not None:
            message.blocks = blocks
        if metadata is not None:
            message.metadata = metadata
        message.edited_ts = self._next_ts()
        message.edits += 1
        return {"channel": channel, "ts": message.ts, "text": message.text,
                "message": message.as_slack(with_metadata=True)}

    def _post_ephemeral(self, args: Json) -> Json:
        channel = self._channel(args)
        user = self._user(args.get("user"))
        if channel.startswith("D") and channel != self.dm_channel(user.id):
            raise SlackError("user_not_in_channel")
        text, blocks = checks.content(args)
        ts = self._next_ts()
        shown: Json = {"channel": channel, "user": user.id, "ts": ts, "text": text or "",
                       "blocks": blocks or []}
        if args.get("thread_ts"):
            shown["thread_ts"] = args["thread_ts"]
        self.ephemerals.append(shown)
        return {"message_ts": ts}

    # ------------------------------------------------------------ views

    def _views_open(self, args: Json) -> Json:
        """A modal, opened for the person whose interaction the trigger came with."""
        user_id = self._spend_trigger(checks.required(args, "trigger_id"))
        view = self._checked_view(args)
        external_id = view.get("external_id")
        if external_id and any(v.get("external_id") == external_id for v in self.views.values()):
            raise SlackError("duplicate_external_id")
        view_id = self._new_view_id()
        stored = self._store_view(view_id, view, team=self._team_of(user_id))
        self._open_modal(user_id, view_id)
        return {"view": stored}

    def _views_push(self, args: Json) -> Json:
        """A view on top of the person's open modal (at most ``MAX_STACK`` open at once)."""
        user_id = self._spend_trigger(checks.required(args, "trigger_id"))
        view = self._checked_view(args)
        if user_id is not None and len(self.modals.get(user_id, [])) >= MAX_STACK:
            raise SlackError("push_limit_reached")
        view_id = self._new_view_id()
        stored = self._store_view(view_id, view, team=self._team_of(user_id))
        self._push_modal(user_id, view_id)
        return {"view": stored}

    def _views_update(self, args: Json) -> Json:
        view_id = self._find_view(args.get("view_id"), args.get("external_id"))
        stored = self.views[view_id]
        if args.get("hash") and args["hash"] != stored["hash"]:
            raise SlackError("hash_conflict")
        return {"view": self._replace_view(view_id, self._checked_view(args))}

    def _views_publish(self, args: Json) -> Json:
        """A person's App Home: checked like Slack checks a home view, kept per user."""
        user = self._user(checks.required(args, "user_id"))
        view = checks.required(args, "view")
        if problems := checks.view_problems(view, kind="home"):
            raise SlackError("invalid_arguments", messages=problems)
        view_id = self._new_view_id()
        self.homes[user.id] = self._store_view(view_id, dict(view), team=user.team)
        return {"view": self.homes[user.id]}

    def _spend_trigger(self, trigger_id: str) -> str | None:
        """The person the trigger was issued for; a trigger opens one view, within 3 s."""
        trigger = self._triggers.get(trigger_id)
        if trigger is None:
            raise SlackError("invalid_trigger_id")
        if trigger.spent:
            raise SlackError("exchanged_trigger_id")
        trigger.spent = True
        if self.timer() - trigger.at > TRIGGER_TTL:
            raise SlackError("expired_trigger_id")
        return trigger.user_id

    def _checked_view(self, args: Json) -> Json:
        # Slack reports a malformed or over-long view as invalid_arguments, not invalid_blocks.
        view = checks.required(args, "view")
        if problems := checks.view_problems(view):
            raise SlackError("invalid_arguments", messages=problems)
        return dict(view)

    def _find_view(self, view_id: object, external_id: object) -> str:
        if not view_id and not external_id:
            raise SlackError("invalid_arguments", messages=["view_id or external_id required"])
        for stored_id, view in self.views.items():
            if stored_id == view_id or (external_id and view.get("external_id") == external_id):
                return stored_id
        raise SlackError("not_found")

    # ------------------------------------------------------------ users

    def _users_info(self, args: Json) -> Json:
        user = self._user(args.get("user"))
        shown = user.as_slack(self.clock.now())
        if str(args.get("include_locale", "")).lower() in ("true", "1"):
            shown["locale"] = user.locale
        return {"user": shown}

    def _users_list(self, args: Json) -> Json:
        """The members the calling token reaches, a page at a time: ``limit`` of them (at most
        1,000; none or 0: all that are left), from the opaque ``cursor`` the last page's
        ``response_metadata.next_cursor`` gave (empty on the last page); deleted users and bots
        among them, as Slack lists them, and ``listed_first`` (raw members a test sets) ahead of
        them."""
        members = [*self.listed_first, *(
            user.as_slack(self.clock.now()) | (
                {"locale": user.locale} if checks.flag(args.get("include_locale")) else {})
            for user in self.users.values() if self._reaches(user))]
        start = 0
        if cursor := args.get("cursor"):
            start = checks.cursor_offset(cursor, len(members))
        limit = checks.page_limit(args.get("limit"))
        end = min(len(members), start + limit) if limit else len(members)
        return {"members": members[start:end], "cache_ts": int(self.clock.now().timestamp()),
                "response_metadata": {
                    "next_cursor": checks.cursor_of(end) if end < len(members) else ""}}

    def _users_lookup_by_email(self, args: Json) -> Json:
        email = checks.required(args, "email")
        for user in self.users.values():
            if user.email and user.email.lower() == str(email).lower():
                return {"user": user.as_slack(self.clock.now())}
        raise SlackError("users_not_found")

    def _dnd_info(self, args: Json) -> Json:
        """A person's Do Not Disturb as another user (the bot) reads it; the scope ``dnd:read``
        is needed (``missing_scope`` without it, naming it, as Slack does)."""
        if "dnd:read" not in self.scopes:
            raise SlackError("missing_scope", extra={
                "needed": "dnd:read", "provided": ",".join(sorted(self.scopes))})
        return self._user(args.get("user")).dnd(self.clock.now())

    def _dnd_team_info(self, args: Json) -> Json:
        """The Do Not Disturb of up to 50 users at once (``users``, comma-separated; required),
        by user id, as ``dnd.info`` tells each; a user it does not know is left out."""
        if "dnd:read" not in self.scopes:
            raise SlackError("missing_scope", extra={
                "needed": "dnd:read", "provided": ",".join(sorted(self.scopes))})
        wanted = [u for u in str(args.get("users") or "").split(",") if u]
        if not wanted:
            raise SlackError("no_users_provided")
        now = self.clock.now()
        return {"users": {u: self.users[u].dnd(now) for u in wanted[:50] if u in self.users}}
