"""bench/soak.py at the suite's size: two web and two worker processes on one Redis, the
reference core and the fake Slack in processes of their own, a few hundred clarifications
answered while web and worker processes are killed, Redis restarts and the core and Slack fail
for a while; the invariants are asserted, never timings. Also the soak's own judge, on records
made by hand, so that what it calls lost, doubled or reordered is known to be found."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cards.actions import ActionCodec, ActionKind, ActionRef

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from soak_check import judge  # noqa: E402
from soak_people import Tally  # noqa: E402
from soak_world import aad_user  # noqa: E402


@dataclass
class SoakRun:
    """One ``bench/soak.py --smoke`` process, its verdict file and its output files."""

    proc: subprocess.Popen[bytes]
    verdict: Path
    out: Path
    err: Path
    deadline: float

    def finish(self) -> None:
        try:
            self.proc.wait(max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.stop()

    def stop(self) -> None:
        """SIGINT first: the soak stops the processes of its world on the way out."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def report(self) -> str:
        return self.out.read_text()[-4000:] + self.err.read_text()[-2000:]


@pytest.fixture(scope="module")
def soak_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[dict[str, SoakRun]]:
    """The smoke runs of the contracts this session's tests ask for, started together: each is a
    world of its own (its Redis, core, fakes and bot processes on ports from its own base, 100
    apart; its own folder and Redis prefix), so they share only the machine, and the module
    waits for the longer run instead of both, one after the other."""
    wanted = sorted({str(item.callspec.params["contract"]) for item in request.session.items
                     if isinstance(item, pytest.Function) and item.module is request.module
                     and hasattr(item, "callspec")})
    runs: dict[str, SoakRun] = {}
    try:
        for contract in wanted:
            folder = tmp_path_factory.mktemp(f"soak-{contract}")
            base = int(os.environ.get("CLARIFY_SOAK_BASE_PORT", "20550")) + (
                0 if contract == "full" else 100)
            out, err = folder / "stdout", folder / "stderr"
            with out.open("wb") as stdout, err.open("wb") as stderr:
                proc = subprocess.Popen(
                    [sys.executable, str(ROOT / "bench" / "soak.py"), "--smoke", "--base-port",
                     str(base), "--json", str(folder / "verdict.json"), "--contract", contract],
                    cwd=ROOT, stdout=stdout, stderr=stderr)
            runs[contract] = SoakRun(proc, folder / "verdict.json", out, err,
                                     time.monotonic() + 300)
        yield runs
    finally:
        for run in runs.values():
            run.stop()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
@pytest.mark.parametrize("contract", ["full", "baseline"])
def test_soak_smoke_loses_doubles_reorders_no_answer_and_sends_no_card_twice_under_faults(
        soak_runs: dict[str, SoakRun], contract: str) -> None:
    """Against the full reference core, and against one that serves the baseline alone."""
    run = soak_runs[contract]
    run.finish()
    report = run.report()
    assert run.verdict.exists(), report
    result = json.loads(run.verdict.read_text())
    v = result["verdict"]
    assert (v["lost"], v["doubled"], v["reordered"]) == (0, 0, 0), report
    assert (v["duplicated"], v["leaks"], v["cards_to_refused"]) == (0, 0, 0), report
    assert v["skips_without_reason"] == 0 and v["gate_refusals"] > 0, report
    assert v["passed_over"] == 0, report  # nobody silently loses their turn to a kill
    assert v["given"] > 100 and v["recorded"] == v["given"], report  # every answer recorded
    assert result["unexpected_exits"] == 0 and result["outbox_left"] == 0, report
    assert result["kills"]["web-0"] >= 3 and result["kills"]["worker-0"] >= 3, report
    faults = Counter(result["faults"])
    assert any(k.startswith("Redis killed") for k in faults), report
    assert any(k.startswith("core times out") for k in faults), report
    assert run.proc.returncode == 0, report


def _records(*responses: tuple[str, str, int] | tuple[str, str, int, bool]
             ) -> list[dict[str, object]]:
    by_id: dict[str, list[list[object]]] = {}
    for cid, person, index, *superseded in responses:
        by_id.setdefault(cid, []).append([person, index, "slack", bool(superseded)])
    return [{"id": cid, "responses": found, "deliveries": [], "skips": [], "ranking": []}
            for cid, found in by_id.items()]


def test_soak_judge_tells_lost_doubled_reordered_and_superseded_answers_apart() -> None:
    tally = Tally()
    tally.given[("c1", "p")] = [0, 1]  # both recorded, in order
    tally.given[("c2", "p")] = [0, 1]  # the first recorded as superseded by the second
    tally.given[("c6", "p")] = [0, 1]  # the first never recorded (once "stale"): lost
    tally.given[("c3", "p")] = [0, 1]  # the last one never recorded: lost
    tally.given[("c4", "p")] = [0]  # recorded twice: doubled
    tally.given[("c5", "p")] = [0, 1]  # recorded the other way round: reordered
    records = _records(("c1", "p", 0), ("c1", "p", 1), ("c2", "p", 0, True), ("c2", "p", 1),
                       ("c6", "p", 1), ("c3", "p", 0),
                       ("c4", "p", 0), ("c4", "p", 0), ("c5", "p", 1), ("c5", "p", 0),
                       ("c5", "other", 2))
    writes = [
        {"method": "chat.postMessage", "to": "U0SR1", "delivery": "c1|p-r1|0|question",
         "text": "[]"},
        {"method": "chat.postMessage", "to": "U0SR1", "delivery": "c1|p-r1|0|question",
         "text": "[]"},
        {"method": "chat.postMessage", "to": "U0SX0", "delivery": "c2|p-x0|0|question",
         "text": "[\"SPANTEXT-00002\"]"},
    ]
    codec = ActionCodec(b"soak judge test key, 32 bytes+")
    data = codec.teams_data(ActionRef(kind=ActionKind.ANSWER, card_ref="d.0123456789abcdef01234567",
                                      clarification_id="c1", candidate=0))
    card = json.dumps({"attachments": [{"content": {"actions": [
        {"type": "Action.Execute", "verb": "clarify.answer", "data": data}]}}]})
    writes += [{"method": "teams.send", "to": aad_user("p-r1"), "delivery": None, "text": card}
               for _ in range(2)]  # the same Teams card twice: one duplicate
    records[0].update(ranking=["p-x0", "p"], skips=[["p-x0", "NO_READ_PERMISSION"]],
                      deliveries=[["p", 0, "question", "slack"]])
    records[1].update(ranking=["p"], skips=[["p", None]])
    records[2].update(ranking=["p"])  # neither a card nor a skip: passed over
    v = judge(records, writes, tally, {"p-x0"}, codec)
    assert (v.given, v.recorded) == (11, 10)
    assert (v.superseded, v.lost, v.doubled, v.reordered) == (1, 2, 1, 1)
    assert (v.cards, v.duplicated, v.leaks, v.cards_to_refused) == (5, 2, 1, 1)
    assert (v.passed_over, v.skips_without_reason, v.gate_refusals) == (1, 1, 1)
    assert not v.ok
