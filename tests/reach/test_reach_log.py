"""The reach log's contract, on memory and PostgreSQL alike: an entry kept once however often
it is added, read by tenant and time, a person erased from every entry (scanned), entries past
the retention expired."""

from __future__ import annotations

from dataclasses import astuple, replace
from datetime import UTC, datetime, timedelta

from bot.reach.log import Kind, ReachEntry, ReachLog

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def entry(n: int, *, person: str = "p-sarah", tenant: str = "acme", kind: Kind = Kind.ASKED,
          at: datetime = T0, cause: str | None = None, reason: str | None = None
          ) -> ReachEntry:
    return ReachEntry(entry_id=f"e-{n}", at=at, tenant=tenant, workspace="ws-1",
                      platform="slack", person_id=person, clarification_id=f"c-{n}",
                      kind=kind, severity="normal", reason_code=reason, cause=cause)


async def test_an_entry_is_kept_once(reach: ReachLog) -> None:
    assert await reach.add([entry(1), entry(2)]) == 2
    assert await reach.add([entry(1), entry(3)]) == 1  # a replayed event: kept once
    assert [e.entry_id for e in await reach.read()] == ["e-1", "e-2", "e-3"]
    assert await reach.add([]) == 0


async def test_read_by_tenant_and_since_oldest_first(reach: ReachLog) -> None:
    await reach.add([entry(1, at=T0 + timedelta(hours=2)), entry(2, tenant="globex"),
                     entry(3, at=T0), entry(4, at=T0 - timedelta(days=1),
                                            kind=Kind.SKIPPED, reason="NO_DELIVERY_ALIAS",
                                            cause="no alias")])
    assert [e.entry_id for e in await reach.read(tenant="acme")] == ["e-4", "e-3", "e-1"]
    assert [e.entry_id for e in await reach.read(tenant="acme", since=T0)] == ["e-3", "e-1"]
    got = (await reach.read(tenant="acme"))[0]
    assert got == entry(4, at=T0 - timedelta(days=1), kind=Kind.SKIPPED,
                        reason="NO_DELIVERY_ALIAS", cause="no alias")
    assert got.at.tzinfo is not None


async def test_an_erased_person_is_in_no_entry(reach: ReachLog) -> None:
    await reach.add([entry(1), entry(2, person="p-ahmed"), entry(3, kind=Kind.ANSWERED),
                     entry(4, person="p-ahmed", kind=Kind.SKIPPED,
                           cause="every platform refused: slack: U-SARAH gone")])
    assert await reach.erase_person({"p-sarah", "U-SARAH"}) == 2
    left = await reach.read()
    assert [e.entry_id for e in left] == ["e-2", "e-4"]
    for kept in left:  # the scan: no field of any entry names them
        assert not any(isinstance(v, str) and ("p-sarah" in v or "U-SARAH" in v)
                       for v in astuple(kept))
    assert await reach.erase_person(set()) == 0


async def test_entries_past_the_retention_expire(reach: ReachLog) -> None:
    await reach.add([entry(1, at=T0 - timedelta(days=91)), entry(2, at=T0 - timedelta(days=89)),
                     entry(3, at=T0)])
    assert await reach.expire(T0 - timedelta(days=90)) == 1
    assert [e.entry_id for e in await reach.read()] == ["e-2", "e-3"]


async def test_the_first_card_of_a_question_and_the_new_fields(reach: ReachLog) -> None:
    """``first_asked``: the earliest card or digest entry of the question, whoever sent it (a
    skip, a reminder or another question's card is none); a card's zone and a skip's cause
    group are kept."""
    def of(n: int, cid: str, kind: Kind, at: datetime, **fields: str) -> ReachEntry:
        return replace(entry(n, kind=kind, at=at), clarification_id=cid, **fields)

    await reach.add([of(1, "c-1", Kind.SKIPPED, T0 - timedelta(hours=3),
                        cause_group="deactivated"),
                     of(2, "c-1", Kind.ASKED, T0, zone="America/New_York"),
                     of(3, "c-1", Kind.DIGESTED, T0 - timedelta(hours=1), zone="Asia/Tokyo"),
                     of(4, "c-1", Kind.REMINDED, T0 - timedelta(hours=2)),
                     of(5, "c-2", Kind.ASKED, T0 - timedelta(days=1))])
    assert await reach.first_asked("c-1") == T0 - timedelta(hours=1)
    assert await reach.first_asked("c-9") is None
    kept = {e.entry_id: e for e in await reach.read()}
    assert (kept["e-1"].cause_group, kept["e-2"].zone, kept["e-3"].zone, kept["e-4"].zone) == (
        "deactivated", "America/New_York", "Asia/Tokyo", None)


async def test_each_workspace_seen_since_with_its_latest_question(reach: ReachLog) -> None:
    """What the weekly report asks the core about: each tenant's workspaces seen since a time,
    with the question of their latest entry; a workspace seen only before is left out."""
    await reach.add([entry(1, at=T0), entry(2, at=T0 + timedelta(hours=1)),
                     entry(3, tenant="globex", at=T0),
                     replace(entry(4, at=T0 + timedelta(hours=2)), workspace="ws-2"),
                     replace(entry(5, at=T0 - timedelta(days=2)), workspace="ws-old")])
    assert await reach.workspaces(since=T0 - timedelta(hours=1)) == {
        ("acme", "ws-1"): "c-2", ("acme", "ws-2"): "c-4", ("globex", "ws-1"): "c-3"}
    assert await reach.workspaces(since=T0 + timedelta(days=1)) == {}
