"""How the local Slack stand-in fails: Slack's ``{"ok": false}`` answers, 429s with Retry-After,
and the HTML gateway page Slack's edge serves for a bare 5xx; the faults a test or
``clarify-bot sandbox`` injects are made of these."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from devslack.model import Json


class SlackError(Exception):
    """A Slack ``{"ok": false}`` answer, with its HTTP status and headers."""

    def __init__(self, error: str, *, status: int = 200, messages: Iterable[str] = (),
                 retry_after: int | None = None, html: bool = False,
                 extra: Json | None = None) -> None:
        super().__init__(error)
        self.error, self.status, self.retry_after, self.html = error, status, retry_after, html
        self.messages = list(messages)
        self.extra = dict(extra or {})  # more fields of the body ("needed", "provided")

    def headers(self) -> dict[str, str]:
        return {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}

    def body(self) -> Json:
        body: Json = {"ok": False, "error": self.error, **self.extra}
        if self.messages:
            body["errors"] = self.messages
            body["response_metadata"] = {"messages": [f"[ERROR] {m}" for m in self.messages]}
        return body


@dataclass
class Fault:
    """An injected failure of a method: its status, Retry-After, named error, calls left, and
    how many calls pass before it; with ``channel``, only calls to that channel count (a
    person's id stands for the bot's DM with them)."""

    status: int
    retry_after: int
    error: str | None
    times: int
    after: int = 0
    channel: str | None = None


def fault_error(fault: Fault) -> SlackError:
    """The answer a fault gives: a 429 with Retry-After, a named error, or a gateway page."""
    if fault.status == 429:
        return SlackError(fault.error or "ratelimited", status=429, retry_after=fault.retry_after)
    # A 5xx without a named error is a gateway page (HTML), as Slack's edge answers.
    html = fault.status >= 500 and fault.error is None
    return SlackError(fault.error or "fatal_error", status=fault.status, html=html)


def gateway_page(status: int) -> str:
    return f"<html><body><h1>{status}</h1>The server could not handle the request.</body></html>"
