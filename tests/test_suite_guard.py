"""The suite's own guard: a test whose task ends with an exception nobody retrieved fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LEAKING = '''
import asyncio


async def _boom() -> None:
    raise RuntimeError("lost")


async def test_leaks_a_task() -> None:
    task = asyncio.get_running_loop().create_task(_boom())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert task.done()
    del task


async def test_retrieves_its_task() -> None:
    task = asyncio.get_running_loop().create_task(_boom())
    await asyncio.sleep(0)
    assert isinstance(task.exception(), RuntimeError)
'''


@pytest.mark.slow
def test_a_task_exception_nobody_retrieved_fails_the_test_that_left_it(tmp_path: Path) -> None:
    target = ROOT / "tests" / f"test_zz_guard_probe_{tmp_path.name}.py"
    target.write_text(LEAKING)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
             str(target)],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )
    finally:
        target.unlink()
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    summary = out.split("short test summary info")[-1]
    # the leak fails at its teardown; the test that retrieved its exception does not
    assert summary.count("ERROR tests/") == 1 and "::test_leaks_a_task" in summary, out
    assert "FAILED" not in summary and "test_retrieves_its_task" not in summary, out
    assert "Task exception was never retrieved" in out
