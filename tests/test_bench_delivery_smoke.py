"""bench/delivery.py at the suite's size: every process of the real benchmark, a few hundred
cards; checks that no card goes out twice and what each job costs in calls, never timings."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PEOPLE = 100  # bench/delivery.py --smoke: 300 cards to 100 people


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_delivery_benchmark_smoke_sends_every_card_once_at_most_three_core_calls_a_job(
        tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "delivery.py"), "--smoke",
                          "--timeout", "240", "--json", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert [r["name"] for r in rows] == ["raw slack_sdk, concurrency 16",
                                         "bot lifted, 1 worker", "bot lifted, 2 workers"]
    for row in rows:
        assert row["cards"] == 300 and row["duplicates"] == 0, row["name"]
        # posted to the user id: no conversations.open before a card
        slack = row["slack_calls"]
        assert slack["chat.postMessage"] == 300 and "conversations.open" not in slack, row["name"]
    for row in rows[1:]:
        calls = row["core_calls"]
        # the clarification read once a job; the people and the reports in one call a job at
        # most (jobs side by side share them); no single person read, resolve or report (polls
        # and housekeeping are not the job's)
        assert calls["GET /v1/clarifications/{clarificationId}"] == 300, row["name"]
        assert 1 <= calls["POST /v1/people/batch"] <= 300, row["name"]
        assert 1 <= calls["POST /v1/reports"] <= 300, row["name"]
        for single in ("GET /v1/people/{personId}", "POST /v1/people/resolve",
                       "POST /v1/clarifications/{clarificationId}/deliveries",
                       "POST /v1/clarifications/{clarificationId}/events"):
            assert single not in calls, (row["name"], single)
        redis = row["redis_calls"]
        workers = 2 if "2 workers" in row["name"] else 1
        # one script a card (the admission, which reserves; the send is recorded by remembering
        # the card), no rate buckets with pacing lifted; at most 6 commands a card in all, those
        # run inside scripts and the workers' polls included, and one more: the card's reminder
        # indexed by its due time (one ZADD a card), and one more: the card's not-yet-reported
        # mark (written with the card) cleared as its job reports it (one HDEL a card; a
        # worker killed before the report leaves the mark for an answer's follow-up)
        assert redis.get("evalsha", 0) <= 300 + 50, row["name"]
        assert redis.get("zadd", 0) <= 300, row["name"]
        assert redis.get("hdel", 0) <= 300, row["name"]
        # and the person's platform profile (zone and locale): read from the store
        # once a person in each worker process (the hours check and the card's locale share
        # it, and so do their next cards), and Slack asked and the answer written a day at
        # most once a person in each worker (two that miss together both ask); never a read or
        # a Slack users.info a card
        # (Slack's from its directory of the workspace, one HGET, adapters.slack.people: the
        # listing's pages and DND batches and a fallback users.info each kept with one HSET and
        # one EXPIRE; the listing's lease and cursor a few GET and SET; a person looked up before
        # the listing reached them is looked for twice, by the zone and by the away check)
        profile_reads = redis.get("get", 0) + redis.get("hget", 0)
        profile_writes = redis.get("set", 0)
        assert profile_reads <= 2 * PEOPLE * workers + 5, row["name"]
        assert profile_writes <= PEOPLE * workers + 5, row["name"]
        # the away rule reads each person's status fresher than the profile (bot.engine.away:
        # kept ten minutes, a users.info shared with the profile's within a minute) and their
        # Do Not Disturb (dnd.info, Slack's Tier 3): in a burst of 100 new people a lookup that
        # outlasts its 2 s patience sends the card anyway and is asked again a minute later,
        # so at most two of each a person in each worker over this short run
        assert slack["users.info"] <= 2 * PEOPLE * workers, row["name"]
        assert slack.get("dnd.info", 0) <= 2 * PEOPLE * workers, row["name"]
        kept = 2 * sum(slack.get(m, 0) for m in ("users.info", "users.list", "dnd.teamInfo"))
        assert slack.get("users.list", 0) <= 2 * workers, row["name"]  # one page a listing
        assert row["redis_per_card"] - (profile_reads + profile_writes + kept) / 300 <= 8, \
            row["name"]
