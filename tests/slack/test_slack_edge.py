"""The receiving edge over real HTTP: whole bodies, one signature check, size limits, identity
shapes and the workspace → tenant mapping for every published payload shape.

Raw requests are written with asyncio sockets to the running aiohttp server, so the bytes on the
wire (split writes, doubled headers, chunked bodies) are exactly what the test says.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlsplit

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.models import ReasonCode
from bot.settings import SlackSettings, SlackWorkspace
from tests.slack.conftest import Stack, payload_of
from tests.slack.test_slack_security import Snapshot, delivered, form, post_raw, sign

PAUSE = 0.05  # between TCP writes, so the server sees separate reads (network pacing, no clock)


# ---------------------------------------------------------------- raw HTTP


async def raw_exchange(stack: Stack, head: bytes, parts: list[bytes], *,
                       pause: float = PAUSE) -> tuple[int, bytes]:
    """Write the request head, then each part after a pause; the status and body answered."""
    url = urlsplit(stack.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        writer.write(head)
        await writer.drain()
        for part in parts:
            await asyncio.sleep(pause)
            writer.write(part)
            await writer.drain()
        # the answer's head and its declared body: a server may keep reading what a refused
        # request still sends (lingering close), so the end of the connection is not awaited
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        answered = await asyncio.wait_for(reader.readexactly(length), 10)
    finally:
        writer.close()
    return int(head.split()[1]), answered


def request_head(headers: list[tuple[str, str]]) -> bytes:
    lines = ["POST /slack/events HTTP/1.1", "Host: 127.0.0.1", "Connection: close",
             "Content-Type: application/x-www-form-urlencoded",
             *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def signed_headers(stack: Stack, body: bytes) -> list[tuple[str, str]]:
    stamp = str(int(time.time()))
    return [("X-Slack-Request-Timestamp", stamp),
            ("X-Slack-Signature", sign(body, secret=stack.signing_secret, stamp=stamp))]


def pieces(body: bytes, count: int) -> list[bytes]:
    size = -(-len(body) // count)
    return [body[i:i + size] for i in range(0, len(body), size)]


async def answers_of(stack: Stack, cid: str) -> list[tuple[str, int | None]]:
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    return [(r.responder, r.answer_index) for r in c.responses]


def refused(stack: Stack, status: int) -> list[Any]:
    return [ev for ev in stack.sink.of("callback_refused") if ev.extra.get("status") == str(status)]


# ---------------------------------------------------------------- the whole body, once


async def test_signed_body_in_several_writes_with_pauses_is_accepted(stack: Stack) -> None:
    """A signed click whose body arrives in four TCP writes, paused between, is answered 200
    and forwarded (the body is read to its end before the signature is checked)."""
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    body = form(await payload_of(stack, "U0SARAH", card, "clarify.answer.1"))
    head = request_head([*signed_headers(stack, body), ("Content-Length", str(len(body)))])
    status, _ = await raw_exchange(stack, head, pieces(body, 4))
    assert status == 200
    assert await answers_of(stack, cid) == [("p-sarah", 1)]


async def test_chunked_signed_body_in_several_writes_is_accepted(stack: Stack) -> None:
    """The same click sent with chunked transfer encoding, one chunk per paused write, is 200."""
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    body = form(await payload_of(stack, "U0SARAH", card, "clarify.answer.0"))
    chunks = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces(body, 3)] + [b"0\r\n\r\n"]
    head = request_head([*signed_headers(stack, body), ("Transfer-Encoding", "chunked")])
    status, _ = await raw_exchange(stack, head, chunks)
    assert status == 200
    assert await answers_of(stack, cid) == [("p-sarah", 0)]


async def test_two_signature_or_two_timestamp_headers_are_refused(stack: Stack) -> None:
    """A signed click with its signature or timestamp header doubled (even with equal, valid
    values) is a 401 and changes nothing."""
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    before = Snapshot(stack)
    body = form(await payload_of(stack, "U0SARAH", card, "clarify.answer.0"))
    stamp, signature = signed_headers(stack, body)
    length = ("Content-Length", str(len(body)))
    for headers in ([stamp, signature, signature, length], [stamp, stamp, signature, length],
                    [stamp, signature, (signature[0], "v0=" + "0" * 64), length]):
        status, _ = await raw_exchange(stack, request_head(headers), [body], pause=0)
        assert status == 401, headers
    status, _ = await raw_exchange(stack, request_head([stamp, signature, length]), [body])
    assert status == 200  # the control: the same request with each header once
    assert await answers_of(stack, cid) == [("p-sarah", 0)]
    assert before.messages != Snapshot(stack).messages  # only the control changed the card


async def test_oversized_declared_length_is_refused_before_the_body_is_sent(stack: Stack
                                                                            ) -> None:
    """A Content-Length over 64 KiB is answered 413 while the body has not even been sent."""
    head = request_head([("X-Slack-Request-Timestamp", str(int(time.time()))),
                         ("X-Slack-Signature", "v0=" + "0" * 64),
                         ("Content-Length", str(10_000_000))])
    status, _ = await raw_exchange(stack, head, [b"payload=%7B"])
    assert status == 413


async def test_oversized_chunked_body_is_refused_without_waiting_for_its_end(stack: Stack
                                                                             ) -> None:
    """A chunked body that passes 64 KiB is answered 413 before its last chunk is sent (the
    request is never terminated here, so a server buffering it all would never answer)."""
    head = request_head([("X-Slack-Request-Timestamp", str(int(time.time()))),
                         ("X-Slack-Signature", "v0=" + "0" * 64),
                         ("Transfer-Encoding", "chunked")])
    chunk = b"x" * 16_384
    status, _ = await raw_exchange(stack, head, [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 5)
    assert status == 413


async def test_body_at_the_limit_is_read_whole(stack: Stack) -> None:
    """A signed body of exactly 64 KiB is not refused for its size (it is judged on content)."""
    body = form({"type": "view_closed", "pad": ""})
    body += b"&pad=" + b"x" * (64 * 1024 - len(body) - 5)
    assert len(body) == 64 * 1024
    head = request_head([*signed_headers(stack, body), ("Content-Length", str(len(body)))])
    status, _ = await raw_exchange(stack, head, pieces(body, 8))
    assert status == 200


_header_values = st.text(max_size=80) | st.sampled_from(
    ["", " 1", "1_000", "１２３", "-5", "9" * 40, "v0=", "v0=" + "g" * 64, "v1=" + "0" * 64])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(stamp=_header_values, signature=_header_values)
async def test_malformed_signature_headers_never_raise(stack: Stack, stamp: str, signature: str
                                                       ) -> None:
    """Whatever the timestamp and signature headers hold, the answer is 401, never a 5xx."""
    body = form({"type": "view_closed"})
    stamp_bytes, sig_bytes = (v.encode("utf-8").replace(b"\r", b"").replace(b"\n", b"")
                              for v in (stamp, signature))
    head = (b"POST /slack/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"X-Slack-Request-Timestamp: " + stamp_bytes + b"\r\n"
            b"X-Slack-Signature: " + sig_bytes + b"\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    status, _ = await raw_exchange(stack, head, [body], pause=0)
    assert status in (400, 401), status  # 400: aiohttp itself refuses a header it cannot parse


# ---------------------------------------------------------------- identity shapes


def _put(path: str, value: object) -> Any:
    def edit(payload: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = payload
        for key in parents:
            target = target[key]
        target[last] = value
    return edit


BAD_IDS = [
    ("user.id", "u0sarah"), ("user.id", "U0SARAH\n"), ("user.id", "X0SARAH"),
    ("user.id", "U" + "A" * 40), ("user.id", ["U0SARAH"]), ("user.team_id", "Z0ACME"),
    ("team.id", "acme"), ("team.id", "T0ACME'--"), ("enterprise.id", "E0ACME DROP"),
    ("team.enterprise_id", "e0acme"), ("container.channel_id", "C0<script>"),
    ("container.message_ts", "yesterday"), ("container.message_ts", "1.2.3"),
    ("trigger_id", "trigger please"), ("trigger_id", 12345),
]


async def test_bad_identity_fields_are_400_with_an_audit_line_and_nothing_forwarded(
        stack: Stack) -> None:
    """Each identity field of the wrong shape is a 400 whose audit line names the field (never
    its value); nothing reaches the core, the outbox or any card."""
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    before = Snapshot(stack)
    for path, value in BAD_IDS:
        response = await stack.click("U0SARAH", card, "clarify.answer.0",
                                     payload_edit=_put(path, value))
        assert response.status == 400, (path, value)
        line = refused(stack, 400)[-1].line()
        assert json.loads(line)["extra"]["field"] == path
        assert "U0SARAH" not in line and (not isinstance(value, str) or value not in line)
    await before.assert_unchanged(cid)
    assert len(refused(stack, 400)) == len(BAD_IDS)
    assert not stack.sink.of("answer_forwarded")


async def test_bad_ids_in_a_modal_submission_are_refused(stack: Stack) -> None:
    """A view_submission whose user id or remembered card reference has the wrong shape is 400."""
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    await stack.click("U0SARAH", card, "clarify.custom")
    await stack.settle()
    (view,) = stack.slack.views.values()
    before = Snapshot(stack)
    meta = json.loads(view["private_metadata"])
    bad_ref = {**view, "private_metadata": json.dumps({**meta, "m": "D0X:not-a-ts"})}
    for user_id, shown in (("not-a-user", view), ("U0SARAH", bad_ref)):
        response = await stack.submit(user_id, shown, {})
        assert response.status == 400
    await before.assert_unchanged(cid)
    assert [ev.extra.get("field") for ev in refused(stack, 400)] == [
        "user.id", "view.private_metadata"]


# ---------------------------------------------------------------- workspace → tenant


def _shape(*, team: object, user_team: object, enterprise: object, org_install: bool = False
           ) -> Any:
    def edit(payload: dict[str, Any]) -> None:
        payload["team"] = team
        payload["user"] = {k: v for k, v in {**payload["user"], "team_id": user_team}.items()
                           if v is not None}
        payload["enterprise"] = enterprise
        payload["is_enterprise_install"] = org_install
    return edit


ACCEPTED_SHAPES = {
    "single workspace": _shape(team={"id": "T0ACME", "domain": "acme"}, user_team="T0ACME",
                               enterprise=None),
    "Grid, workspace install": _shape(
        team={"id": "T0ACME", "domain": "acme", "enterprise_id": "E0ACME",
              "enterprise_name": "Acme"}, user_team="T0ACME",
        enterprise={"id": "E0ACME", "name": "Acme"}),
    "Grid, user.team_id is the org": _shape(
        team={"id": "T0ACME", "domain": "acme", "enterprise_id": "E0ACME"}, user_team="E0ACME",
        enterprise={"id": "E0ACME", "name": "Acme"}),
    "team null, only user.team_id": _shape(team=None, user_team="T0ACME", enterprise=None),
    "org-wide install, team null": _shape(team=None, user_team="T0ACME",
                                          enterprise={"id": "E0ACME", "name": "Acme"},
                                          org_install=True),
}


async def test_every_published_payload_shape_from_a_configured_workspace_is_served(
        stack: Stack) -> None:
    """Single workspace, Enterprise Grid, team null with only user.team_id, and org-wide installs
    from Acme's configured workspace are all answered 200 and forwarded as the clicker."""
    for name, shape in ACCEPTED_SHAPES.items():  # high: one card each, never a digest
        cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]},
                                    severity="high")
        response = await stack.click("U0SARAH", card, "clarify.answer.1", payload_edit=shape)
        assert response.status == 200, name
        assert await answers_of(stack, cid) == [("p-sarah", 1)], name
    assert not stack.sink.of("callback_refused")


async def test_org_wide_install_without_a_team_maps_through_an_enterprise_entry(
        make_stack: Any) -> None:
    """With the whole org configured, an org-wide callback naming no team at all (team null,
    user.team_id the org id) is served; with only one of its teams configured it is a 403."""
    org_wide = _shape(team=None, user_team="E0ACME", enterprise={"id": "E0ACME", "name": "Acme"},
                      org_install=True)
    whole_org = await make_stack(slack=SlackSettings(workspaces=(
        SlackWorkspace(enterprise_id="E0ACME", tenant="acme"),)))
    cid, card = await delivered(whole_org, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    response = await whole_org.click("U0SARAH", card, "clarify.answer.0", payload_edit=org_wide)
    assert response.status == 200
    assert await answers_of(whole_org, cid) == [("p-sarah", 0)]
    one_team = await make_stack()
    cid, card = await delivered(one_team, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    response = await one_team.click("U0SARAH", card, "clarify.answer.0", payload_edit=org_wide)
    assert response.status == 403
    assert await answers_of(one_team, cid) == []


REFUSED_SHAPES = {
    "unknown workspace": _shape(team={"id": "T0NOBODY"}, user_team="T0NOBODY", enterprise=None),
    "team null, unknown user.team_id": _shape(team=None, user_team="T0NOBODY", enterprise=None),
    "listed team, another org": _shape(team={"id": "T0ACME", "enterprise_id": "E0OTHER"},
                                       user_team="T0ACME", enterprise={"id": "E0OTHER"}),
    "org ids disagree": _shape(team={"id": "T0ACME", "enterprise_id": "E0ACME"},
                               user_team="T0ACME", enterprise={"id": "E0OTHER"}),
    "no team anywhere": _shape(team=None, user_team=None, enterprise=None),
}


async def test_anything_else_is_403_with_tenant_scope_mismatch(stack: Stack) -> None:
    """Unknown workspaces, a listed team claimed by another org, contradicting org ids and
    team-less callbacks without a configured org are 403s audited as TENANT_SCOPE_MISMATCH."""
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    before = Snapshot(stack)
    for name, shape in REFUSED_SHAPES.items():
        response = await stack.click("U0SARAH", card, "clarify.answer.0", payload_edit=shape)
        assert response.status == 403, name
    await before.assert_unchanged(cid)
    audited = refused(stack, 403)
    assert len(audited) == len(REFUSED_SHAPES)
    assert {ev.reason_code for ev in audited} == {ReasonCode.TENANT_SCOPE_MISMATCH}


async def test_refusals_log_status_and_reason_never_values(stack: Stack, capsys: Any) -> None:
    """Refused requests are logged with their status and reason; no header or payload value."""
    from bot.logs import configure_logging

    configure_logging(level="info")
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    capsys.readouterr()
    await stack.click("U0SARAH", card, "clarify.answer.0", secret="0" * 32)
    await stack.click("U0SARAH", card, "clarify.answer.0",
                      payload_edit=_put("user.id", "U0SECRETVALUE!"))
    await post_raw(stack, b"payload=" + b"x" * 70_000, headers={})
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    refusals = [(x["status"], x["reason"]) for x in lines if x["event"] == "slack.request_refused"]
    assert refusals == [(401, "invalid_signature"), (400, "malformed_payload"),
                        (413, "too_large")]
    text = json.dumps(lines)
    assert "U0SECRETVALUE" not in text and stack.signing_secret not in text
    assert "X-Slack-Signature" not in text


async def test_socket_mode_callbacks_get_the_same_checks(stack: Stack) -> None:
    """Through bolt's Socket Mode path, a bad identity field or an unmapped workspace is audited
    and acknowledged without reaching a listener; a good click still answers."""
    from slack_bolt.request.async_request import AsyncBoltRequest

    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    before = Snapshot(stack)

    async def over_socket(**kwargs: Any) -> int:
        payload = await payload_of(stack, "U0SARAH", card, "clarify.answer.1", **kwargs)
        answered = await stack.adapter.kit.app.async_dispatch(
            AsyncBoltRequest(body=payload, mode="socket_mode"))
        return answered.status

    assert await over_socket(payload_edit=_put("user.id", "not-a-user")) == 200
    assert await over_socket(team_id="T0NOBODY", enterprise_id=None) == 200
    await before.assert_unchanged(cid)
    assert [(ev.extra["status"], ev.extra.get("field"), ev.reason_code)
            for ev in stack.sink.of("callback_refused")] == [
        ("400", "user.id", None), ("403", None, ReasonCode.TENANT_SCOPE_MISMATCH)]
    assert await over_socket() == 200
    assert await answers_of(stack, cid) == [("p-sarah", 1)]


async def test_a_clicks_work_logs_with_the_callbacks_ids(stack: Stack, capsys: Any) -> None:
    """Log lines written by the work a click starts (the outbox consumer forwarding it, after
    the acknowledgement) carry the callback's ids: its clarification and the person's stream
    (a pseudonym), never the chat user in clear text."""
    from bot.chat import person_order_token
    from bot.logs import configure_logging

    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    configure_logging(level="debug")  # audit events are log lines at debug (the sink has them)
    capsys.readouterr()
    await stack.click("U0SARAH", card, "clarify.answer.0")
    await stack.settle()
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    forwarded = [x for x in lines if x.get("type") == "answer_forwarded"]
    assert forwarded, lines
    # the person's stream by its pseudonymous order token (the card's), never the chat user
    assert {(x["order_token"], x["clarification_id"]) for x in forwarded} == {
        (person_order_token("p-sarah"), cid)}
    assert not any("U0SARAH" in json.dumps(x) for x in lines)
