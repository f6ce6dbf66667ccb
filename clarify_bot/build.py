"""What this process runs: the installed release and the commit it was built from.

The commit comes from ``CLARIFY_BOT_COMMIT`` (the container image sets it from its build
argument), else from git when the package runs from a checkout, else it is ``unknown``. Both are
shown by ``clarify-bot --version`` and exported as the ``clarify_build_info`` metric's labels.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from functools import cache
from importlib import metadata
from pathlib import Path

COMMIT_ENV = "CLARIFY_BOT_COMMIT"
UNKNOWN = "unknown"
_CHECKOUT = Path(__file__).resolve().parents[1]


def version() -> str:
    try:
        return metadata.version("clarify-bot")
    except metadata.PackageNotFoundError:
        return UNKNOWN


def commit(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    given = env.get(COMMIT_ENV, "").strip()
    return given if given and given != UNKNOWN else _checkout_commit()


@cache
def _checkout_commit() -> str:
    if not (_CHECKOUT / ".git").exists():
        return UNKNOWN
    try:
        done = subprocess.run(["git", "-C", str(_CHECKOUT), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    found = done.stdout.strip()
    return found if done.returncode == 0 and found else UNKNOWN


def describe() -> str:
    return f"clarify-bot {version()} (commit {commit()})"
