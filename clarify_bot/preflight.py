"""What ``serve`` checks before it serves, shared with ``check-config`` (docs/operations.md,
"What check-config promises").

- ``static``: the settings as loaded, the secrets this configuration needs (and a bot token
  beside a distributed app), each platform's own refusal (Teams without an app id), the audit
  file. ``serve`` runs it first (``clarify_bot.app.open_service``) and stops on it;
  ``check-config --offline`` runs only this.
- ``live``: each dependency the service needs, asked once as the service does at start: the
  installation database (reachable, at this release's schema: ``serve`` stops on it, through
  ``adapters.slack.distributed.prepare``, with the same words from
  ``adapters.slack.database``), the core (reachable, and the token accepted), Slack's
  ``auth.test`` for the single-workspace token (Socket Mode: the app-level token too), Teams'
  connector token where the app has a client secret. ``serve`` reports these at start and in
  ``/readyz`` and is not ready while any fails; ``check-config`` refuses on each, naming the
  setting to fix, in one line each.

Every line names a setting or a command and never a value.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from bot.core import errors as e
from bot.settings import Problem, Settings, SettingsError
from bot.settings.models import Channel
from clarify_bot import platforms

CORE_TOKEN = "CLARIFY_BOT_CORE_TOKEN"
CHECK_SECONDS = 5.0  # each live check: an unreachable dependency is said, not waited for


def static(settings: Settings) -> None:
    """SettingsError naming every problem ``serve`` would stop on before opening anything."""
    problems: list[Problem] = []
    unmounted = platforms.unmounted(settings)
    if unmounted is not None:
        problems.append(unmounted)
    try:
        settings.require_secrets()
    except SettingsError as exc:
        problems += exc.problems
    if Channel.TEAMS in settings.clarify.channels:
        teams = settings.teams.connection_problem()
        if teams is not None:
            problems.append(teams)
    audit = audit_file_problem(settings)
    if audit is not None:
        problems.append(audit)
    if problems:
        raise SettingsError(problems)


def audit_file_problem(settings: Settings) -> Problem | None:
    """A ``jsonl`` audit file the process cannot append to."""
    path = settings.audit.path
    if settings.audit.sink != "jsonl" or path is None:
        return None
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
        return Problem("audit.path", str(path), f"cannot be appended to ({reason})")
    return None


async def live(settings: Settings) -> list[Problem]:
    """Every dependency the configuration needs, asked side by side (each within
    CHECK_SECONDS): the problems found, one per dependency."""
    checks = [("CLARIFY_BOT_DATABASE_URL", database_problem(settings)),
              ("CLARIFY_BOT_DATABASE_URL", reach_problem(settings)),
              ("core.url", core_problem(settings))]
    if Channel.SLACK in settings.clarify.channels:
        checks.append(("slack.api_url", slack_problem(settings)))
    if Channel.TEAMS in settings.clarify.channels:
        checks.append(("TEAMS_APP_PASSWORD", teams_problem(settings)))
    found = await asyncio.gather(*(check for _, check in checks), return_exceptions=True)
    problems = []
    for (setting, _), result in zip(checks, found, strict=True):
        if isinstance(result, BaseException):  # whatever else failed: named, never quoted
            problems.append(Problem(setting, None, f"could not be checked "
                                    f"({type(result).__name__})"))
        elif result is not None and result.key not in {p.key for p in problems}:
            problems.append(result)  # one per setting: the installation database's first
    return problems


async def reach_problem(settings: Settings) -> Problem | None:
    """The reach record kept in PostgreSQL: its table there (``clarify-bot db upgrade``)."""
    from clarify_bot.reach_record import kept_log

    reach = kept_log(settings)
    if reach is None:
        return None
    try:
        missing = await asyncio.wait_for(reach.missing(), CHECK_SECONDS)
    except Exception as exc:  # noqa: BLE001 (value-free: the error's type, never its text)
        missing = f"the reach record cannot be read ({type(exc).__name__})"
    finally:
        await reach.aclose()
    return None if missing is None else Problem("CLARIFY_BOT_DATABASE_URL", None, missing)


async def database_problem(settings: Settings) -> Problem | None:
    """The installation database (a distributed Slack app): reachable and current."""
    if Channel.SLACK not in settings.clarify.channels or not settings.slack.distributed:
        return None
    from adapters.slack import database, schema
    from adapters.slack.installations import InstallationDB
    from adapters.slack.sealing import Sealer

    url = settings.secrets.require("database_url")
    assert settings.slack.oauth.client_id is not None
    engine = schema.open_engine(url, pool_size=1)
    db = InstallationDB(engine=engine, client_id=settings.slack.oauth.client_id,
                        sealer=Sealer.from_setting(settings.secrets.require("slack_token_key")))
    try:  # serve's start-up check itself (adapters.slack.database.ready)
        problem, _ = await asyncio.wait_for(database.ready(db, url), CHECK_SECONDS)
    except TimeoutError as exc:
        problem = Problem(database.SETTING, None, database.failure(exc, url))
    finally:
        await engine.dispose()
    return problem


async def core_problem(settings: Settings, *, tenant: str | None = None) -> Problem | None:
    """The core reachable and the bot's token accepted; with ``tenant``, also that tenant in
    the token's scope (``clarify-bot slack install-link``): the core has no route that lists
    tenants, so the tenant-scoped clarification list is asked for one item, which the contract
    answers 403 ``TENANT_SCOPE_MISMATCH`` for a tenant outside the token's scope, whether it
    exists elsewhere or not (docs/core-contract.md, "Tenants")."""
    from clarify_bot.clients import core_client

    url = settings.core.url
    async with core_client(settings) as core:
        try:
            await asyncio.wait_for(core.list_clarifications(tenant_id=tenant, limit=1),
                                   CHECK_SECONDS)
        except e.TenantScopeMismatch:
            return Problem("--tenant", tenant, f"the core at {url} answers that this tenant is "
                           f"not one the bot's token ({CORE_TOKEN}) serves: check its spelling "
                           "(tenant ids are case-sensitive), or ask the core's operator to add "
                           "it to the token's scope")
        except e.AuthenticationFailed:
            return Problem(CORE_TOKEN, None, f"the core at {url} rejects this token")
        except e.PermissionDenied as exc:
            return Problem(CORE_TOKEN, None, f"the core at {url} refuses this token "
                           f"({exc.code}): it needs the clarify audience")
        except (TimeoutError, e.CoreTransportError, e.ServerError) as exc:
            kind = "no answer in time" if isinstance(exc, TimeoutError | e.CoreTimeout) else \
                "cannot connect" if isinstance(exc, e.CoreConnectError) else \
                f"it answered {getattr(exc, 'status', '') or type(exc).__name__}"
            return Problem("core.url", url, f"cannot reach the core ({kind})")
        except e.CoreError as exc:
            return Problem("core.url", url, "the core's answer is not the contract's "
                           f"({type(exc).__name__})")
    return None


async def slack_problem(settings: Settings) -> Problem | None:
    """Slack's ``auth.test`` for the single-workspace bot token (a distributed app has a token
    per installation, checked by the service as it serves each), and in Socket Mode the
    app-level token (``apps.connections.open``, which opens nothing until connected to)."""
    if settings.slack.distributed:
        return None
    from slack_sdk.errors import SlackApiError

    from adapters.slack.mount import APP_TOKEN_ERRORS, APP_TOKEN_SETTING
    from adapters.slack.web import web_client
    from adapters.slack.webapi import CREDENTIAL_ERRORS

    calls: list[tuple[str, str, dict[str, Any], frozenset[str]]] = [
        ("SLACK_BOT_TOKEN", "auth.test", {}, CREDENTIAL_ERRORS)]
    if settings.slack.mode == "socket":
        calls.append((APP_TOKEN_SETTING, "apps.connections.open", {}, APP_TOKEN_ERRORS))
    api = settings.slack.api_url
    async with aiohttp.ClientSession() as session:
        for setting, method, args, refusals in calls:
            token = settings.secrets.require("slack_app_token" if setting == APP_TOKEN_SETTING
                                             else "slack_bot_token")
            client = web_client(token=token, base_url=api, session=session,
                                timeout=int(CHECK_SECONDS))
            try:
                await asyncio.wait_for(client.api_call(method, json=args), CHECK_SECONDS)
            except SlackApiError as exc:
                data = exc.response.data  # a proxy's or gateway's page is no JSON
                error = str(data.get("error", "unknown")) if isinstance(data, dict) else \
                    f"HTTP {exc.response.status_code}"
                if error in refusals:
                    return Problem(setting, None, f"Slack refuses this token ({error})")
                return Problem(setting, None, f"Slack's {method} failed ({error})")
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                return Problem("slack.api_url", api, f"cannot reach Slack "
                               f"({type(exc).__name__}): check the network or slack.api_url")
    return None


async def teams_problem(settings: Settings) -> Problem | None:
    """A connector token from the identity platform, where it can be asked from here: an app
    with a client secret (a managed identity answers only inside Azure; an anonymous local run
    has nothing to check)."""
    teams = settings.teams
    if teams.app_id is None or not teams.needs_password:
        return None
    from microsoft_agents.authentication.msal import MsalAuth

    from adapters.teams.auth import connection
    from adapters.teams.connector import TOKEN_RESOURCE, TOKEN_SCOPE, TOKEN_SETTING

    try:
        auth = MsalAuth(connection(teams, settings.secrets.value("teams_app_password")))
        await asyncio.wait_for(auth.get_access_token(TOKEN_RESOURCE, [TOKEN_SCOPE]),
                               CHECK_SECONDS * 2)
    except TimeoutError:
        return Problem(TOKEN_SETTING, None, "the identity platform gave no connector token in "
                       "time (is login.microsoftonline.com reachable from here?)")
    except Exception as exc:  # MSAL's errors carry no common root, nor a value worth quoting
        return Problem(TOKEN_SETTING, None, "the identity platform gives no connector token for "
                       f"teams.app_id with this secret ({type(exc).__name__})")
    return None
