"""A fake core behind the client's own wire (``bot.core.http.MockTransport``) and sample response
bodies for the client tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from multidict import CIMultiDict

from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.core.http import MockTransport, WireRequest, WireResponse, encode
from devcore.client import DevCoreClient

TOKEN = "tok-s3cr3t-bearer-value"
T0 = "2026-07-04T09:00:00Z"

Reply = WireResponse | Exception | Callable[[WireRequest], WireResponse]


def respond(status: int, *, json: Any = None, text: str | None = None, content: bytes = b"",
            headers: dict[str, str] | None = None) -> WireResponse:
    """A response of the fake core: a JSON body (sent as the core sends it), text or bytes."""
    every = CIMultiDict(headers or {})
    if json is not None:
        content = encode(json)
        every.setdefault("Content-Type", "application/json")
    elif text is not None:
        content = text.encode()
        every.setdefault("Content-Type", "text/plain; charset=utf-8")
    return WireResponse(status, every, content)


@dataclass
class FakeCore:
    """Answers each request with the next scripted reply (the last one repeats) and records it."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[WireRequest] = field(default_factory=list)

    def script(self, *replies: Reply) -> None:
        self.replies = list(replies)

    def __call__(self, request: WireRequest) -> WireResponse:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply(request) if callable(reply) else reply

    @property
    def last_json(self) -> Any:
        return json.loads(self.requests[-1].content) if self.requests[-1].content else None


@dataclass
class Sleeps:
    """An injected sleep that records the delays it was asked for and never waits."""

    calls: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def core() -> FakeCore:
    return FakeCore()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def make_client(core: FakeCore, sleeps: Sleeps, clock: ManualClock):
    """Build a CoreClient (or DevCoreClient) wired to the fake core, jitter fixed at 0.5."""
    made: list[CoreClient | DevCoreClient] = []

    def make(*, dev: bool = False, retry: RetryPolicy | None = None, base_url: str = "http://core.test"):
        cls = DevCoreClient if dev else CoreClient
        client = cls(
            base_url=base_url,
            token=TOKEN,
            transport=MockTransport(core),
            retry=retry or RetryPolicy(max_attempts=4, base=0.25, cap=8.0, retry_after_cap=30.0),
            sleep=sleeps,
            random=lambda: 0.5,
            clock=clock,
        )
        made.append(client)
        return client

    return make


@pytest.fixture
async def client(make_client) -> Any:
    async with make_client() as c:
        yield c


# ---------------------------------------------------------------- sample bodies


def payload() -> dict[str, Any]:
    return {"clarificationId": "clar-1", "ranking": ["p-ana", "p-ben"]}


def leased_job() -> dict[str, Any]:
    return {"id": "job-1", "kind": "clarify:temporal", "payload": payload(), "attempts": 1,
            "maxAttempts": 3, "leaseToken": "lease-1", "leaseExpiresAt": T0}


def job_view(state: str = "leased") -> dict[str, Any]:
    return {"id": "job-1", "kind": "clarify:temporal", "state": state, "payload": payload(),
            "attempts": 1, "maxAttempts": 3, "visibleAt": T0}


def summary(cid: str = "clar-1") -> dict[str, Any]:
    return {"id": cid, "tenantId": "t-1", "workspaceId": "w-1", "kind": "relative_date",
            "severity": "high", "state": "open", "quorumState": "pending",
            "documentTitle": "Q3 plan", "createdAt": T0, "updatedAt": T0}


def clarification() -> dict[str, Any]:
    return {
        "id": "clar-1", "tenantId": "t-1",
        "workspace": {"workspaceId": "w-1", "name": "Finance", "stewardId": "p-stew"},
        "target": "node-9", "kind": "relative_date", "severity": "high", "state": "open",
        "quorumPolicy": {"requiredConfirmations": 1, "requiredRoles": ["editor"],
                         "allowStewardOverride": True},
        "quorum": {"state": "pending", "required": 1, "confirmations": 0, "remaining": 1},
        "candidates": [{"index": 0, "label": "1 Sept 2026", "validFrom": T0}],
        "question": "When does the contract start?", "spanExcerpt": "starts next month",
        "document": {"documentId": "doc-1", "title": "Q3 plan", "url": "https://docs.test/1",
                     "sourceVersionTx": T0,
                     "acl": {"workspaceId": "w-1", "readRoles": ["viewer"]}},
        "detectorConfidence": 0.9, "appliedCandidateConfidence": 0.4,
        "ranking": ["p-ana"], "createdAt": T0, "updatedAt": T0,
    }


def answer_result(outcome: str = "bound") -> dict[str, Any]:
    return {"outcome": outcome, "clarificationId": "clar-1", "state": "answered",
            "quorumState": "satisfied", "responseId": "r-1", "quorumSatisfied": True,
            "quorumRemaining": 0, "factVersionTx": T0}


def delivery_record() -> dict[str, Any]:
    return {"deliveryId": "d-1", "personId": "p-ana", "channel": "slack", "kind": "question",
            "attempt": 1, "messageRef": "C1:1700000000.1", "deliveredAt": T0}


def event() -> dict[str, Any]:
    return {"eventId": "e-1", "type": "skipped", "at": T0, "personId": "p-ben",
            "reasonCode": "NO_DELIVERY_ALIAS"}


def person() -> dict[str, Any]:
    return {"personId": "p-ana", "tenantId": "t-1", "displayName": "Ana",
            "verifiedEnterpriseIdentity": True,
            "aliases": {"slack": [{"userId": "U1", "teamId": "T1", "verified": True}]},
            "memberships": [{"workspaceId": "w-1", "role": "editor"}]}


def fact_version() -> dict[str, Any]:
    return {"logicalId": "fact/9", "versionTx": T0, "validFrom": T0, "confidence": 0.95,
            "provenance": {"evidenceClass": "human_clarification", "clarificationId": "clar-1"}}


def error_body(code: str, status: int, message: str = "Value-free message.") -> dict[str, Any]:
    return {"code": code, "message": message, "status": status}
