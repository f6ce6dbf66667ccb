"""The README's two commands and the ./dev script behind them (and behind CI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_opens_with_the_demo_and_the_test_command_ci_runs() -> None:
    """README's first block is exactly `./dev demo` and `./dev test`; .ci/run runs the latter."""
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert first is not None and readme.index("```sh") < readme.index("\n## ")
    assert first.group(1).splitlines() == ["./dev demo", "./dev test"]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith("#")]
    assert ci[-1] == 'exec ./dev test "$@"'


def test_dev_finds_pyenvs_build_when_python312_on_path_refuses(tmp_path: Path) -> None:
    """With PATH holding only a pyenv-style `python3.12` shim that refuses to run, ./dev picks
    pyenv's own 3.12 build directly."""
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "python3.12"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    build = tmp_path / "pyenv" / "versions" / "3.12.7" / "bin"
    build.mkdir(parents=True)
    (build / "python").symlink_to(os.path.realpath(sys.executable))
    found = subprocess.run(
        ["bash", str(ROOT / "dev"), "find-python"], capture_output=True, text=True, check=True,
        env={"HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "pyenv"),
             "PATH": f"{shims}:/usr/bin:/bin"}).stdout.strip()
    assert found == str(build / "python")


def test_dev_says_plainly_when_no_python_is_good_enough(tmp_path: Path) -> None:
    """No 3.12+ anywhere: ./dev exits non-zero with one line saying so."""
    shims = tmp_path / "shims"
    shims.mkdir()
    for name in ("python3", "python3.12", "python3.13", "python3.14"):
        (shims / name).write_text("#!/bin/sh\nexit 127\n")
        (shims / name).chmod(0o755)
    done = subprocess.run(["bash", str(ROOT / "dev"), "find-python"], capture_output=True,
                          text=True, env={"HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path),
                                          "PATH": f"{shims}:/usr/bin:/bin"})
    assert done.returncode == 1
    assert done.stderr.strip() == "dev: no Python 3.12 or newer found"
