"""The local Slack stand-in: Slack's Web API, its OAuth side and its people on 127.0.0.1, for the
tests and for ``clarify-bot sandbox``.

The bot's real ``slack_sdk`` client talks to it as to Slack; it checks what it is sent as Slack
does, records every call, keeps what each person sees (``seen_by``) and sends the bot their
clicks, submissions and App Home visits, signed as Slack signs them. ``LocalSlack`` is the
whole of it; the other names are its ids and the records it keeps.
"""

from devslack.errors import Fault, SlackError, fault_error
from devslack.interactions import Reply
from devslack.model import (
    APP_ID,
    APP_TOKEN,
    BOT_ID,
    BOT_TOKEN,
    BOT_USER_ID,
    TEAM_ID,
    TRIGGER_TTL,
    Call,
    Clock,
    Message,
    RetryGap,
    User,
    Workspace,
)
from devslack.server import LocalSlack

__all__ = [
    "APP_ID", "APP_TOKEN", "BOT_ID", "BOT_TOKEN", "BOT_USER_ID", "TEAM_ID", "TRIGGER_TTL",
    "Call", "Clock", "Fault", "LocalSlack", "Message", "Reply", "RetryGap", "SlackError",
    "User", "Workspace", "fault_error",
]
