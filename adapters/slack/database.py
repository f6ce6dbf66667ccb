"""What went wrong with the installation database, in words an operator can act on.

``serve`` (before it serves), ``check-config`` and the ``db``/``slack`` commands all say a
database failure through ``failure``: what failed (the server cannot be reached, the database
does not exist, the user or password is refused, the schema is behind) and the fix, naming
``CLARIFY_BOT_DATABASE_URL`` or the command to run; never the URL's credentials, never the
driver's own text (it can quote a query or a value). ``check`` is the start-up check of the
schema, ``ready`` the whole of it (the schema, then every stored token opened with the key),
which ``serve`` and ``check-config`` both run.
"""

from __future__ import annotations

import socket

from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.slack import schema
from adapters.slack.installations import InstallationDB
from adapters.slack.sealing import KEY_SETTING, TokenKeyError
from bot.settings import Problem

SETTING = "CLARIFY_BOT_DATABASE_URL"
# PostgreSQL's SQLSTATE classes and codes (https://www.postgresql.org/docs/current/errcodes-appendix.html)
_BY_SQLSTATE = {
    "3D000": "the database does not exist: create it (`createdb`), then run "
             "`clarify-bot db upgrade`",
    "28000": "PostgreSQL refuses the user in {setting}: check the user name and pg_hba.conf",
    "28P01": "PostgreSQL refuses the password in {setting}",
    "42501": "the user in {setting} lacks a privilege it needs on the database (it must "
             "create tables for `clarify-bot db upgrade`, and read and write them to serve)",
    "53300": "PostgreSQL has no connection left (too many clients): raise max_connections or "
             "use fewer replicas",
    "57P03": "PostgreSQL is starting up or shutting down: try again in a moment",
    "25006": "the database is read-only (a standby?): point {setting} at the primary",
}


def _sqlstate(exc: BaseException) -> str | None:
    seen: BaseException | None = exc
    for _ in range(6):  # SQLAlchemy's DBAPIError → the dialect's Error → asyncpg's
        if seen is None:
            return None
        code = getattr(seen, "sqlstate", None)
        if isinstance(code, str) and code:
            return code
        seen = getattr(seen, "orig", None) or seen.__cause__
    return None


def failure(exc: BaseException, url: str) -> str:
    """One line naming what failed at the database ``url`` names, and the fix."""
    where = schema.where(url)
    if isinstance(exc, schema.SchemaOutdated):
        return str(exc)
    code = _sqlstate(exc)
    if code in _BY_SQLSTATE:
        return (f"the installation database at {where}: "
                + _BY_SQLSTATE[code].format(setting=SETTING))
    if isinstance(exc, socket.gaierror):
        return (f"cannot find the installation database's host ({where}): check the host in "
                f"{SETTING}")
    if isinstance(exc, ConnectionRefusedError):
        return (f"cannot connect to the installation database at {where} (connection "
                f"refused): is PostgreSQL running there? check {SETTING}")
    if isinstance(exc, TimeoutError):
        return (f"the installation database at {where} did not answer in time: is it "
                f"reachable from here? check {SETTING}")
    if isinstance(exc, ConnectionError) and "SSL" in str(exc):
        return (f"the installation database at {where} does not accept SSL: its server has "
                f"SSL off, so `sslmode` in {SETTING} asks what it cannot give (or turn SSL on)")
    if isinstance(exc, OSError):
        reason = (exc.strerror or type(exc).__name__).lower()
        return f"cannot connect to the installation database at {where} ({reason}): check {SETTING}"
    kind = f"PostgreSQL error {code}" if code else type(exc).__name__
    return f"cannot use the installation database at {where} ({kind}): check {SETTING}"


async def check(engine: AsyncEngine, url: str) -> str | None:
    """Start-up's check: None when the database answers at this release's schema, else the
    line ``failure`` words (an outdated schema names `clarify-bot db upgrade`)."""
    try:
        await schema.require_current(engine)
    except Exception as exc:  # unreachable, refused, missing, behind: each named
        return failure(exc, url)
    return None


async def ready(db: InstallationDB, url: str) -> tuple[Problem | None, int]:
    """``serve``'s start-up check and ``check-config``'s, in the same words: the schema current
    (``check``), then every stored token opened with the configured keys (a key that opens
    none names ``CLARIFY_BOT_SLACK_TOKEN_KEY`` and key ids only). The problem, or None; and how
    many tokens are still in plain text (written by an earlier release)."""
    refused = await check(db.engine, url)
    if refused is not None:
        return Problem(SETTING, None, refused), 0
    try:
        _, plain = await db.check_tokens()
    except TokenKeyError as exc:
        return Problem(KEY_SETTING, None, str(exc)), 0
    except Exception as exc:  # unreachable, refused, a wrong password: named, never a value
        return Problem(SETTING, None, failure(exc, url)), 0
    return None, plain
