"""The sandbox's web page and the small JSON API behind it.

``GET /`` is the page (static files shipped with the package: no build step, nothing fetched from
another host). ``GET /api/state`` is what each person sees in the local Slack and the clock; ``GET
/api/record`` the core's record. The ``POST`` routes act as a person would (a click, a submitted or
closed modal, opening the App Home), move the clock, create a question as ingestion would, or have
the local Slack rate-limit the bot's next message. A bad request is a 400 with one line naming the
field, never its value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import structlog
from aiohttp import web

from bot.core.errors import CoreError
from clarify_bot.sandbox.clock import WORKING_DAYS, ClockMoveError
from clarify_bot.sandbox.held import held_questions
from clarify_bot.sandbox.questions import QuestionError, question_request
from clarify_bot.sandbox.record import core_record
from clarify_bot.sandbox.world import Sandbox
from devslack import Reply

log = structlog.get_logger("clarify.sandbox")
STATIC = Path(__file__).with_name("static")
FILES = {"sandbox.js": "text/javascript", "blockkit.js": "text/javascript",
         "sandbox.css": "text/css", "index.html": "text/html"}
MAX_BODY = 64 * 1024
RATE_LIMIT_SECONDS = 5
LOCAL_NAMES = frozenset({"127.0.0.1", "localhost"})
SANDBOX_KEY: web.AppKey[Sandbox] = web.AppKey("sandbox", Sandbox)


class BadRequest(Exception):
    """A request the page should not have sent: its field, never its value."""


def page_app(sandbox: Sandbox) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY, middlewares=[_json_errors])
    app[SANDBOX_KEY] = sandbox
    app.router.add_get("/", _index)
    app.router.add_get("/static/{name}", _static)
    app.router.add_get("/api/state", _state)
    app.router.add_get("/api/record", _record)
    app.router.add_post("/api/click", _click)
    app.router.add_post("/api/home", _home)
    app.router.add_post("/api/submit", _submit)
    app.router.add_post("/api/close", _close)
    app.router.add_post("/api/clock", _clock)
    app.router.add_post("/api/questions", _question)
    app.router.add_post("/api/slack", _slack_fault)
    return app


@web.middleware
async def _json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    # Only this machine's own page: a name that is not the loopback's (a DNS rebinding) is
    # refused, and a POST must be JSON, which another site's page cannot send without asking
    # first (a CORS preflight this server never grants).
    if request.host.rsplit(":", 1)[0] not in LOCAL_NAMES:
        return web.json_response({"error": "host: the sandbox answers on 127.0.0.1 only"},
                                 status=403)
    if request.method == "POST" and request.content_type != "application/json":
        return web.json_response({"error": "content-type: expected application/json"},
                                 status=415)
    try:
        return await handler(request)
    except (BadRequest, QuestionError, ClockMoveError) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    except CoreError as exc:  # the core refused: its code, never the request's content
        code = getattr(exc, "code", "") or type(exc).__name__
        return web.json_response({"error": f"the core refused the request ({code})"},
                                 status=502)
    except web.HTTPException:
        raise
    except Exception as exc:  # a fault of the sandbox itself: named by its kind, logged
        log.exception("sandbox.page_failed", path=request.path, error=type(exc).__name__)
        return web.json_response({"error": f"the sandbox failed ({type(exc).__name__}); "
                                  "its terminal shows the details"}, status=500)


async def _index(_: web.Request) -> web.Response:
    return _file("index.html")


async def _static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in FILES:
        raise web.HTTPNotFound()
    return _file(name)


def _file(name: str) -> web.Response:
    body = (STATIC / name).read_bytes()
    return web.Response(body=body, content_type=FILES[name], charset="utf-8",
                        headers={"Cache-Control": "no-store",
                                 "Content-Security-Policy": "default-src 'self'; "
                                 "img-src 'self' data:; style-src 'self'; script-src 'self'"})


async def _state(request: web.Request) -> web.Response:
    box = request.app[SANDBOX_KEY]
    now = box.clock.now()
    people = []
    for p in box.people:
        local = now.astimezone(ZoneInfo(p.zone))
        people.append({**p.as_json(), "localTime": local.isoformat(),
                       "inHours": local.weekday() in WORKING_DAYS and 8 <= local.hour < 18,
                       "sees": box.slack.seen_by(p.slack_id)})
    return web.json_response({"now": now.isoformat(), "tenant": box.tenant,
                              "windowHours": box.window.total_seconds() / 3600,
                              "workspaces": box.workspaces, "people": people,
                              "unreachable": box.unreachable})


async def _record(request: web.Request) -> web.Response:
    box = request.app[SANDBOX_KEY]
    held = await held_questions(box.holds)
    found = await core_record(box.core, tenant=box.tenant)
    for clarification in found:
        clarification["held"] = held.get(clarification["id"])
    return web.json_response({"clarifications": found})


async def _click(request: web.Request) -> web.Response:
    box, body = request.app[SANDBOX_KEY], await _body(request)
    user = _user(box, body)
    return _acted(await box.slack.click(
        user, channel=_str(body, "channel"), ts=_str(body, "ts"),
        action_id=_str(body, "actionId"), value=_opt(body, "value"),
        block_id=_opt(body, "blockId"), selected_date=_opt(body, "selectedDate")))


async def _home(request: web.Request) -> web.Response:
    """Open the App Home (the ``app_home_opened`` event) or click a button on it."""
    box, body = request.app[SANDBOX_KEY], await _body(request)
    user = _user(box, body)
    if body.get("actionId") is None:
        return _acted(await box.slack.open_home(user))
    return _acted(await box.slack.click_home(
        user, action_id=_str(body, "actionId"), value=_opt(body, "value"),
        block_id=_opt(body, "blockId")))


async def _submit(request: web.Request) -> web.Response:
    box, body = request.app[SANDBOX_KEY], await _body(request)
    values = body.get("values")
    if not isinstance(values, dict):
        raise BadRequest("values: expected the modal's inputs by block and action id")
    return _acted(await box.slack.submit(_user(box, body), view_id=_str(body, "viewId"),
                                         values=values))


async def _close(request: web.Request) -> web.Response:
    box, body = request.app[SANDBOX_KEY], await _body(request)
    return _acted(await box.slack.close(_user(box, body), view_id=_str(body, "viewId")))


async def _clock(request: web.Request) -> web.Response:
    box, body = request.app[SANDBOX_KEY], await _body(request)
    person = box.person(str(body.get("user", ""))) or box.people[0]
    now = box.move_clock(_str(body, "step"), zone=person.zone)
    return web.json_response({"now": now.isoformat()})


async def _question(request: web.Request) -> web.Response:
    box, body = request.app[SANDBOX_KEY], await _body(request)
    wanted = question_request(body, tenant=box.tenant, workspaces=set(box.workspaces),
                              people={p.person_id for p in box.people})
    created = await box.dev.create_clarification(request=wanted)
    return web.json_response({"id": created.clarification.id}, status=201)


async def _slack_fault(request: web.Request) -> web.Response:
    """Slack answers the bot's next new message with a rate limit (429, Retry-After), as Slack
    does under load: the page then shows the card arrive once the bot has waited it out."""
    box, body = request.app[SANDBOX_KEY], await _body(request)
    seconds = body.get("retryAfter", RATE_LIMIT_SECONDS)
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 1 <= seconds <= 60:
        raise BadRequest("retryAfter: expected whole seconds from 1 to 60")
    box.slack.fail_next("chat.postMessage", status=429, retry_after=seconds)
    return web.json_response({"method": "chat.postMessage", "retryAfter": seconds})


def _acted(reply: Reply | None) -> web.Response:
    """What the bot answered the stand-in's request: its HTTP status and body, so the page can
    show a refusal as Slack would (a modal's errors, a failed action); a closed modal that asked
    for no notice sends nothing (status 0)."""
    if reply is None:
        return web.json_response({"status": 0, "answer": None})
    return web.json_response({"status": reply.status, "answer": reply.body})


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("body: expected a JSON object") from None
    if not isinstance(body, dict):
        raise BadRequest("body: expected a JSON object")
    return body


def _user(box: Sandbox, body: dict[str, Any]) -> str:
    user = _str(body, "user")
    if box.person(user) is None:
        raise BadRequest("user: not one of the sandbox's people")
    return user


def _str(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value or len(value) > 2000:
        raise BadRequest(f"{key}: required, as text")
    return value


def _opt(body: dict[str, Any], key: str) -> str | None:
    return None if body.get(key) is None else _str(body, key)
