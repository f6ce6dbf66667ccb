"""The edge's side of the abuse limits (decided in ``bot.abuse_limits``): whose address a request
comes from, and the refusal a platform hears (docs/reliability.md, "Abuse limits")."""

from __future__ import annotations

import structlog
from aiohttp import web

from bot.abuse_limits import Limit, Throttled

log = structlog.get_logger("clarify.limits")
FORWARDED_FOR = "X-Forwarded-For"
_WORDS = {Limit.IP: "rate_limited", Limit.USER: "rate_limited", Limit.TASKS: "busy"}


def client_address(request: web.Request, trusted_hops: int) -> str | None:
    """The client's address: the connecting one, or, behind ``trusted_hops`` proxies that each
    append the address they were connected from to X-Forwarded-For, the one the outermost of
    them saw (entries further left are whatever the client wrote, and are not trusted). A
    request with fewer entries than that did not come through every proxy: its connecting
    address stands."""
    if trusted_hops <= 0:
        return request.remote
    entries = [e.strip() for h in request.headers.getall(FORWARDED_FOR, [])
               for e in h.split(",")]
    if len(entries) < trusted_hops or not entries[-trusted_hops]:
        return request.remote
    return entries[-trusted_hops][:64]


def limited(refused: Throttled) -> web.Response:
    """429 (a rate limit) or 503 (the task cap) with Retry-After; the body names the limit in
    one word, nothing of the request."""
    status = 503 if refused.limit is Limit.TASKS else 429
    log.info("request_refused", status=status, limit=refused.limit.value)
    return web.json_response({"ok": False, "error": _WORDS[refused.limit]}, status=status,
                             headers={"Retry-After": str(refused.retry_after)})
