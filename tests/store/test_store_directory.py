"""A platform's directory of people, on every backend: members kept per workspace, a page
written at once, a member replaced, never read across workspaces; on Redis one hash per
workspace whose key and fields name nobody, with its time to live."""

from __future__ import annotations

from datetime import timedelta

from bot.store.base import Directories, Store

from .conftest import Backend


async def test_members_are_kept_per_workspace_and_read_one_at_a_time(
        store: Directories) -> None:
    await store.directory_put("inst|T1", {"U1": '{"tz":"Asia/Tokyo"}', "U2": "{}"},
                              ttl_seconds=3600)
    assert await store.directory_get("inst|T1", "U1") == '{"tz":"Asia/Tokyo"}'
    assert await store.directory_get("inst|T1", "U2") == "{}"
    assert await store.directory_get("inst|T1", "U3") is None
    assert await store.directory_get("inst|T2", "U1") is None  # another workspace's


async def test_a_later_page_replaces_a_member_and_keeps_the_others(store: Directories) -> None:
    await store.directory_put("w", {"U1": "a", "U2": "b"}, ttl_seconds=3600)
    await store.directory_put("w", {"U1": "c"}, ttl_seconds=3600)
    await store.directory_put("w", {}, ttl_seconds=3600)  # an empty page changes nothing
    assert [await store.directory_get("w", u) for u in ("U1", "U2")] == ["c", "b"]


async def test_a_directory_lasts_its_time_to_live(backend: Backend, store: Store) -> None:
    await store.directory_put("w", {"U1": "a"}, ttl_seconds=60)
    if backend.kind == "memory":
        backend.clock.advance(timedelta(seconds=61))
        assert await store.directory_get("w", "U1") is None
        return
    client = backend.client()
    names = [n async for n in client.scan_iter(match=f"{backend.prefix}:directory:*")]
    assert len(names) == 1 and "w" not in names[0].rsplit(":", 1)[1]
    assert 0 < await client.ttl(names[0]) <= 60
    assert "U1" not in await client.hkeys(names[0])
