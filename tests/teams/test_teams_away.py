"""Who is away, as Teams says it: the Teams channel's ``away`` against a fake Microsoft Graph
over real HTTP on 127.0.0.1 (tests/teams/fakegraph.py: its token endpoint, presence and
automatic replies), built as production builds it (``open_teams_channel`` with client
credentials at the fake's token endpoint). Time is the manual clock; every wait the reads take
is recorded and moves it.

docs/teams.md, "Who is away", describes each outcome tested here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest
import structlog

from adapters.teams.away import PERMISSION_HOLD, TOKEN_HOLD, AwayReader
from adapters.teams.channel import TeamsChannel, open_teams_channel
from adapters.teams.graph import ClientCredentials
from adapters.teams.graph_times import graph_time, zone_of
from bot.channel import Absences, Address, Away, ChannelError, TeamsReach
from bot.clock import ManualClock
from bot.settings import TeamsSettings, TeamsTenant
from bot.store.memory import MemoryStore
from tests.teams.fakegraph import (
    MAILBOX_PERMISSION,
    MESSAGE,
    PRESENCE_PERMISSION,
    SECRET,
    FakeGraph,
    dt,
)
from tests.teams.outbound import APP_ID, CODEC, ORG, SARAH, Sleeps, Tokens

AHMED = "8f1c2d3e-0000-4000-8000-00000000a002"
OTHER_ORG = "0f1e2d3c-4b5a-4968-8776-655443322110"  # globex's Entra tenant


def settings(fake: FakeGraph, **changes: object) -> TeamsSettings:
    base: dict[str, object] = {
        "app_id": APP_ID, "app_tenant_id": ORG, "graph_url": fake.graph_url,
        "login_url": fake.login_url,
        "tenants": (TeamsTenant(aad_tenant_id=ORG, tenant="acme"),
                    TeamsTenant(aad_tenant_id=OTHER_ORG, tenant="globex"))}
    return TeamsSettings(**{**base, **changes})  # type: ignore[arg-type]


def person(user: str = SARAH, org: str = ORG) -> Address:
    return Address(platform="teams", person_id="p-x", user_id=user,
                   reach=TeamsReach(aad_tenant_id=org), verified=True)


@dataclass
class Rig:
    fake: FakeGraph
    clock: ManualClock
    sleeps: Sleeps
    channel: TeamsChannel

    @property
    def reader(self) -> AwayReader:
        assert self.channel.absences is not None
        return self.channel.absences

    async def away(self, user: str = SARAH, org: str = ORG) -> Away | None:
        return await self.channel.away(person(user, org))

    def later(self, delta: timedelta) -> None:
        self.clock.advance(delta)


@pytest.fixture
async def fake() -> AsyncIterator[FakeGraph]:
    async with FakeGraph(app_id=APP_ID) as graph:
        for user in (SARAH, AHMED):
            graph.set_presence(user)
            graph.set_replies(user)
        yield graph


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as http:
        yield http


def build(fake: FakeGraph, clock: ManualClock, session: aiohttp.ClientSession,
          *, secret: str = SECRET, **changes: object) -> Rig:
    sleeps = Sleeps(clock)
    teams = settings(fake, **changes)
    tokens = ClientCredentials(session=session, login_url=teams.login_url, app_id=APP_ID,
                               secret=secret, clock=clock)
    channel = open_teams_channel(teams, session=session, tokens=Tokens(),
                                 store=MemoryStore(clock=clock), clock=clock, codec=CODEC,
                                 sleep=sleeps, graph_tokens=tokens)
    return Rig(fake=fake, clock=clock, sleeps=sleeps, channel=channel)


@pytest.fixture
def rig(fake: FakeGraph, clock: ManualClock, session: aiohttp.ClientSession) -> Rig:
    return build(fake, clock, session)


# ---------------------------------------------------------------- what Teams says


async def test_the_teams_channel_offers_absences(rig: Rig) -> None:
    assert isinstance(rig.channel, Absences)
    assert await rig.away() is None  # available, no automatic replies


async def test_scheduled_automatic_replies_say_away_until_their_end_in_a_windows_zone(
        rig: Rig) -> None:
    """Outlook names the schedule's zone the Windows way: 08:00 Pacific Daylight Time on the
    20th is 15:00 UTC. Presence says out of office too; the automatic replies decide (they know
    until when)."""
    rig.fake.set_presence(SARAH, "OutOfOffice", availability="Offline", out_of_office=True)
    rig.fake.set_replies(SARAH, "scheduled",
                         start=dt("2026-07-03T17:00:00", "Pacific Standard Time"),
                         end=dt("2026-07-20T08:00:00", "Pacific Standard Time"))
    assert await rig.away() == Away(until=datetime(2026, 7, 20, 15, 0, tzinfo=UTC),
                                    source="teams_auto_reply")


async def test_always_enabled_automatic_replies_say_away_with_no_end(rig: Rig) -> None:
    rig.fake.set_replies(SARAH, "alwaysEnabled")
    assert await rig.away() == Away(until=None, source="teams_auto_reply")


@pytest.mark.parametrize(("activity", "flagged"), [("OutOfOffice", False),
                                                   ("Offline", True)])
async def test_presence_out_of_office_says_away_until_unknown(
        rig: Rig, activity: str, flagged: bool) -> None:
    """Out of office by presence (its activity, or its out-of-office settings: Teams' own
    schedule, an event shown as out of office) with no automatic replies on: away, end
    unknown."""
    rig.fake.set_presence(SARAH, activity, out_of_office=flagged)
    assert await rig.away() == Away(until=None, source="teams_presence")


@pytest.mark.parametrize(("start", "end"), [
    (dt("2026-07-10T09:00:00", "W. Europe Standard Time"),
     dt("2026-07-24T18:00:00", "W. Europe Standard Time")),  # later this week
    (dt("2026-06-20T09:00:00", "Europe/Berlin"), dt("2026-07-06T10:59:00", "Europe/Berlin")),
])
async def test_a_schedule_that_does_not_hold_now_says_not_away(
        rig: Rig, start: dict[str, str], end: dict[str, str]) -> None:
    """On holiday from Friday, or back since 08:59 UTC (10:59 in Berlin): not away now."""
    rig.fake.set_replies(SARAH, "scheduled", start=start, end=end)
    assert await rig.away() is None


async def test_a_person_without_a_mailbox_is_read_by_presence_alone(rig: Rig) -> None:
    rig.fake.no_mailbox.add(SARAH)
    assert await rig.away() is None
    rig.fake.set_presence(SARAH, "OutOfOffice")
    rig.later(timedelta(minutes=6))
    assert await rig.away() == Away(until=None, source="teams_presence")
    assert [c.status for c in rig.fake.of("auto_replies")] == [404, 404]


async def test_what_was_read_is_reused_for_five_minutes(rig: Rig) -> None:
    rig.fake.set_replies(SARAH, "alwaysEnabled")
    assert await rig.away() == await rig.away()
    assert len(rig.fake.of("presence")) == len(rig.fake.of("auto_replies")) == 1
    rig.later(timedelta(minutes=5))
    rig.fake.set_replies(SARAH, "disabled")
    assert await rig.away() is None
    assert len(rig.fake.of("auto_replies")) == 2


async def test_one_token_per_tenant_from_the_tenants_token_endpoint(rig: Rig) -> None:
    """Client credentials for Graph's .default scope in the person's own tenant, kept."""
    await rig.away(SARAH)
    await rig.away(AHMED)
    await rig.away(SARAH, OTHER_ORG)
    tokens = rig.fake.of("token")
    assert [c.tenant for c in tokens] == [ORG, OTHER_ORG]
    assert tokens[0].form == {"client_id": APP_ID, "scope": "https://graph.microsoft.com/.default",
                              "grant_type": "client_credentials"}


async def test_the_message_text_is_never_logged(rig: Rig) -> None:
    rig.fake.set_presence(SARAH, "OutOfOffice", out_of_office=True)
    rig.fake.set_replies(SARAH, "alwaysEnabled")
    with structlog.testing.capture_logs() as logs:
        assert await rig.away() is not None
    assert logs and MESSAGE not in json.dumps(logs, default=str)
    assert [(line["event"], line["source"], line["until_known"]) for line in logs
            if line["event"] == "teams.away_read"] == [
        ("teams.away_read", "teams_auto_reply", False)]


# ---------------------------------------------------------------- permissions


@pytest.mark.parametrize(("granted", "missing", "still_read", "source"), [
    (MAILBOX_PERMISSION, PRESENCE_PERMISSION, "auto_replies", "presence"),
    (PRESENCE_PERMISSION, MAILBOX_PERMISSION, "presence", "auto_replies"),
])
async def test_a_missing_permission_is_said_once_and_its_read_rests_an_hour(
        rig: Rig, granted: str, missing: str, still_read: str, source: str) -> None:
    """Graph refuses one read for want of its permission (403 Forbidden / ErrorAccessDenied):
    one error naming the permission, shown in /readyz, the read not asked again for an hour
    (the other one still is, and still finds who is away); then asked again with a new token,
    and once granted, said so."""
    rig.fake.grant(ORG, granted)
    rig.fake.set_replies(AHMED, "alwaysEnabled")
    rig.fake.set_presence(AHMED, "OutOfOffice")
    with structlog.testing.capture_logs() as logs:
        first = await rig.away(SARAH)
        second = await rig.away(AHMED)
        rig.later(timedelta(minutes=30))
        await rig.away(SARAH)
    assert first is None
    assert second is not None
    assert [c.status for c in rig.fake.of(source)] == [403]
    assert len(rig.fake.of(still_read)) == 3
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [(e["event"], e["permission"], e["tenant"]) for e in errors] == [
        ("teams.away_permission_missing", missing, "acme")]
    key = "presence" if source == "presence" else "auto_reply"
    assert rig.reader.status()["teams_away"]["acme"][key] == f"missing: {missing}"  # type: ignore[index]

    rig.fake.grant(ORG, PRESENCE_PERMISSION, MAILBOX_PERMISSION)
    rig.later(PERMISSION_HOLD)
    with structlog.testing.capture_logs() as logs:
        assert await rig.away(AHMED) is not None
    assert [c.status for c in rig.fake.of(source)] == [403, 200]
    assert len(rig.fake.of("token")) == 2  # asked with a new token: the grant shows in it
    assert [line["event"] for line in logs if line["event"].startswith("teams.away_perm")] == [
        "teams.away_permission_granted"]
    assert rig.reader.status()["teams_away"]["acme"][key] == "ok"  # type: ignore[index]


async def test_without_either_permission_the_channel_cannot_tell(rig: Rig) -> None:
    """Both reads refused: ChannelError (the person is then not known to be away), each
    permission named once, and nothing asked of Graph for the hour after."""
    rig.fake.grant(ORG)
    with structlog.testing.capture_logs() as logs:
        with pytest.raises(ChannelError) as caught:
            await rig.away(SARAH)
        with pytest.raises(ChannelError):
            await rig.away(AHMED)
    assert caught.value.retryable and not caught.value.lasting
    assert sorted(line["permission"] for line in logs if line["log_level"] == "error") == [
        MAILBOX_PERMISSION, PRESENCE_PERMISSION]
    assert len(rig.fake.of("presence")) == len(rig.fake.of("auto_replies")) == 1


async def test_an_opaque_token_refused_counts_as_the_permission_missing(
        fake: FakeGraph, clock: ManualClock, session: aiohttp.ClientSession) -> None:
    """A token whose claims cannot be read says nothing of its permissions: Graph's 403 is
    then taken at its word."""
    fake.opaque.add(ORG)
    fake.grant(ORG, PRESENCE_PERMISSION)
    fake.set_presence(SARAH, "OutOfOffice")
    rig = build(fake, clock, session)
    assert await rig.away() == Away(until=None, source="teams_presence")
    await rig.away(AHMED)
    assert len(fake.of("auto_replies")) == 1
    assert rig.reader.status()["teams_away"]["acme"] == {  # type: ignore[index]
        "presence": "ok", "auto_reply": f"missing: {MAILBOX_PERMISSION}"}


async def test_a_mailbox_left_out_by_an_access_policy_holds_nobody_else(rig: Rig) -> None:
    """A 403 while the token carries MailboxSettings.Read concerns that one mailbox (an
    Exchange application access policy): not the permission, nothing rests."""
    rig.fake.left_out.add(SARAH)
    rig.fake.set_replies(AHMED, "alwaysEnabled")
    with structlog.testing.capture_logs() as logs:
        assert await rig.away(SARAH) is None
        assert await rig.away(AHMED) == Away(until=None, source="teams_auto_reply")
    assert not [line for line in logs if line["log_level"] == "error"]
    assert [line["code"] for line in logs if line["event"] == "teams.away_refused"] == [
        "ErrorAccessDenied"]
    assert rig.reader.status()["teams_away"]["acme"]["auto_reply"] == "ok"  # type: ignore[index]


async def test_the_start_up_check_reads_the_permissions_off_each_tenants_token(
        rig: Rig) -> None:
    """Before anyone is asked: acme granted presence only, globex both. The missing one is
    logged once (the read refused later is not logged again) and its read rests."""
    rig.fake.grant(ORG, PRESENCE_PERMISSION)
    assert rig.reader.status() == {"teams_away": {
        "acme": {"presence": "unchecked", "auto_reply": "unchecked"},
        "globex": {"presence": "unchecked", "auto_reply": "unchecked"}}}
    with structlog.testing.capture_logs() as logs:
        await rig.reader.check_in_time()
        assert await rig.away(SARAH) is None
    assert rig.reader.status() == {"teams_away": {
        "acme": {"presence": "ok", "auto_reply": f"missing: {MAILBOX_PERMISSION}"},
        "globex": {"presence": "ok", "auto_reply": "ok"}}}
    assert [(line["event"], line["permission"]) for line in logs
            if line["log_level"] == "error"] == [
        ("teams.away_permission_missing", MAILBOX_PERMISSION)]
    assert rig.fake.of("auto_replies") == []


async def test_a_tenant_that_gives_the_app_no_token_is_said_once_and_rests(
        fake: FakeGraph, clock: ManualClock, session: aiohttp.ClientSession) -> None:
    """The identity platform refuses (a wrong secret, or a tenant that never consented): one
    error naming TEAMS_APP_PASSWORD with the AADSTS number, never the secret or the
    description; ChannelError; the tenant not asked again for ten minutes."""
    rig = build(fake, clock, session, secret="not-the-secret")
    with structlog.testing.capture_logs() as logs:
        await rig.reader.check()
        with pytest.raises(ChannelError):
            await rig.away()
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [(e["event"], e["tenant"], e["code"], e["setting"]) for e in errors] == [
        ("teams.graph_token_refused", "acme", "invalid_client AADSTS7000215",
         "TEAMS_APP_PASSWORD"),
        ("teams.graph_token_refused", "globex", "invalid_client AADSTS7000215",
         "TEAMS_APP_PASSWORD")]
    said = json.dumps(logs, default=str)
    assert "not-the-secret" not in said and MESSAGE not in said
    assert rig.reader.status()["teams_away"]["acme"] == {  # type: ignore[index]
        "presence": "no_token", "auto_reply": "no_token"}
    assert len(fake.of("token")) == 2
    rig.later(TOKEN_HOLD)
    with pytest.raises(ChannelError):
        await rig.away()
    assert len(fake.of("token")) == 3


# ---------------------------------------------------------------- Graph's limits


async def test_a_429_is_waited_out_for_its_retry_after(rig: Rig) -> None:
    rig.fake.fail("auto_replies", 429, retry_after="3")
    rig.fake.set_replies(SARAH, "alwaysEnabled")
    assert await rig.away() == Away(until=None, source="teams_auto_reply")
    assert rig.sleeps.taken == [3.0]
    assert [c.status for c in rig.fake.of("auto_replies")] == [429, 200]


async def test_a_429_longer_than_the_budget_is_not_waited_and_not_asked_again_before_it_ends(
        rig: Rig) -> None:
    """Graph asks for two minutes: that read gives up now (the other still decides) and is not
    asked again in the tenant until the two minutes have passed."""
    rig.fake.fail("presence", 429, retry_after="120")
    assert await rig.away(SARAH) is None
    assert await rig.away(AHMED) is None
    assert rig.sleeps.taken == []
    assert len(rig.fake.of("presence")) == 1 and len(rig.fake.of("auto_replies")) == 2
    rig.later(timedelta(seconds=120))
    rig.fake.set_presence(SARAH, "OutOfOffice")
    rig.later(timedelta(minutes=5))  # past what was kept of Sarah
    assert await rig.away(SARAH) == Away(until=None, source="teams_presence")


async def test_a_slow_graph_is_given_up_within_the_reads_timeout(
        fake: FakeGraph, clock: ManualClock, session: aiohttp.ClientSession) -> None:
    fake.slow("presence", 5.0)
    fake.slow("auto_replies", 5.0)
    rig = build(fake, clock, session)
    graph = rig.reader.graph
    graph.timeout_seconds = 0.2
    with pytest.raises(ChannelError):
        await rig.away()
    fake.slow("auto_replies", 0.0)
    fake.set_replies(AHMED, "alwaysEnabled")
    assert await rig.away(AHMED) == Away(until=None, source="teams_auto_reply")


async def test_reads_in_flight_are_bounded(
        fake: FakeGraph, clock: ManualClock, session: aiohttp.ClientSession) -> None:
    """teams.graph_concurrency reads at once, however many people the engine asks about."""
    fake.slow("presence", 0.05)
    fake.slow("auto_replies", 0.05)
    rig = build(fake, clock, session, graph_concurrency=2)
    users = [f"8f1c2d3e-0000-4000-8000-0000000001{i:02d}" for i in range(6)]
    for user in users:
        fake.set_presence(user)
        fake.set_replies(user)
    assert await asyncio.gather(*(rig.away(user) for user in users)) == [None] * 6
    assert len(fake.of("presence")) == len(fake.of("auto_replies")) == 6
    assert fake.most_in_flight == 2


# ---------------------------------------------------------------- off, and the addresses


async def test_read_away_off_asks_nothing(
        fake: FakeGraph, clock: ManualClock, session: aiohttp.ClientSession) -> None:
    rig = build(fake, clock, session, read_away=False)
    assert rig.channel.absences is None
    fake.set_replies(SARAH, "alwaysEnabled")
    assert await rig.away() is None
    assert fake.calls == []


@pytest.mark.parametrize("address", [
    Address(platform="teams", person_id="p", user_id=SARAH, reach=None),
    person(SARAH, "11111111-2222-4333-8444-999999999999"),  # a tenant not served
    person("../../me/messages"),
])
async def test_an_address_it_cannot_read_is_refused_unasked(rig: Rig, address: Address) -> None:
    with pytest.raises(ChannelError):
        await rig.channel.away(address)
    assert rig.fake.calls == []


# ---------------------------------------------------------------- Outlook's zones


@pytest.mark.parametrize(("name", "zone"), [
    ("Pacific Standard Time", "America/Los_Angeles"),
    ("W. Europe Standard Time", "Europe/Berlin"),
    ("India Standard Time", "Asia/Calcutta"),
    ("Europe/Berlin", "Europe/Berlin"),
    ("UTC", "UTC"),
    ("tzone://Microsoft/Utc", "UTC"),
])
def test_outlook_zone_names_windows_and_iana(name: str, zone: str) -> None:
    found = zone_of(name)
    assert found is not None and found.key == zone


def test_a_time_in_an_unknown_zone_is_read_as_utc() -> None:
    assert zone_of("Customized Time Zone") is None
    assert graph_time(dt("2026-07-20T08:00:00", "Customized Time Zone")) == datetime(
        2026, 7, 20, 8, 0, tzinfo=UTC)
    assert graph_time({"dateTime": "not a time", "timeZone": "UTC"}) is None
    assert graph_time(None) is None


# ---------------------------------------------------------------- as the service mounts it


@pytest.mark.parametrize(("table", "kind", "resource"), [
    ("", "ClientCredentials", "https://graph.microsoft.com"),
    ('graph_url = "https://graph.microsoft.us/v1.0"\n', "ClientCredentials",
     "https://graph.microsoft.us"),
    ('app_type = "managed-identity"\n', "ProviderTokens", "https://graph.microsoft.com"),
])
async def test_the_service_reads_who_is_away_with_the_apps_own_tokens(
        tmp_path: Path, table: str, kind: str, resource: str) -> None:
    """Client credentials at teams.login_url for an app with a secret (a national cloud's
    Graph asks for its own resource), a managed identity's msal provider; /readyz shows the
    reads, unchecked until the start-up check or a read says more."""
    from clarify_bot.app import open_service
    from tests.teams.test_teams_mount import BASE
    from tests.test_settings import GUID, SECRETS, load

    # the start-up check's token request goes to a closed port on this machine
    settings = load(tmp_path, BASE + f'[teams]\n{table}app_id = "{GUID}"\n'
                    f'app_tenant_id = "{GUID}"\nlogin_url = "http://127.0.0.1:9"\n'
                    f'[[teams.tenants]]\naad_tenant_id = "{ORG}"\ntenant = "acme"\n',
                    **SECRETS)
    async with open_service(settings) as service:
        channel = service.engine.deliverer.channels["teams"]
        assert isinstance(channel, TeamsChannel) and channel.absences is not None
        tokens = channel.absences.graph.tokens
        assert type(tokens).__name__ == kind
        assert tokens.resource == resource  # type: ignore[attr-defined]
        shown: dict[str, object] = {}
        for detail in service.readiness.details:
            shown.update(detail())
        assert shown["teams_away"] == {"acme": {"presence": "unchecked",
                                                "auto_reply": "unchecked"}}


async def test_the_service_with_read_away_off_shows_it_off(tmp_path: Path) -> None:
    from clarify_bot.app import open_service
    from tests.teams.test_teams_mount import BASE
    from tests.test_settings import GUID, SECRETS, load

    settings = load(tmp_path, BASE + f'[teams]\napp_id = "{GUID}"\napp_tenant_id = "{GUID}"\n'
                    'read_away = false\n', **SECRETS)
    async with open_service(settings) as service:
        channel = service.engine.deliverer.channels["teams"]
        assert isinstance(channel, TeamsChannel) and channel.absences is None
        shown: dict[str, object] = {}
        for detail in service.readiness.details:
            shown.update(detail())
        assert shown["teams_away"] == "off"


async def test_a_managed_identitys_token_says_its_permissions_too(
        clock: ManualClock, session: aiohttp.ClientSession) -> None:
    """msal's token for a managed identity, for Graph's resource; its roles read the same way."""
    import jwt as pyjwt

    from adapters.teams.graph import ProviderTokens

    token = pyjwt.encode({"roles": [PRESENCE_PERMISSION]}, "k" * 32, algorithm="HS256")
    provider = Tokens(token=token)
    got = await ProviderTokens(provider).token(ORG, fresh=True)
    assert got.roles == frozenset({PRESENCE_PERMISSION})
    assert provider.asked == [True]
    provider.fail = True
    with pytest.raises(Exception) as caught:
        await ProviderTokens(provider).token(ORG)
    assert type(caught.value).__name__ == "GraphRefused"
