"""The one error the reference core raises internally; the web layer turns it into an error body."""

from __future__ import annotations

from bot.core.errors import ErrorCode, message_of, status_of


class CoreFault(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        self.code = code
        self.status = status_of(code)
        self.message = message or message_of(code)
        super().__init__(f"{self.status} {code}")
