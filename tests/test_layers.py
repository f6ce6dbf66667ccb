"""The layers' import rules (docs/architecture.md): import-linter's contracts in ``.importlinter``
(``./dev test`` runs ``lint-imports`` before pytest), and what they cannot say.

- The real tree keeps every contract; each contract fails on a file that breaks it, in a
  generated skeleton of the tree (every module of the real one, empty, but for the imports a
  contract's ``ignore_imports`` allows), checked by import-linter's own command.
- The cards' contract names every part of ``bot/`` but the core's models and errors, so a new
  module of ``bot/`` is forbidden to the cards from the start.
- Not expressible as a contract: importing ``cards`` loads neither httpx nor the core client at
  run time (``bot.core`` loads its client only when one of its names is asked for, which
  import-linter sees as an import of ``bot.core`` itself), and no module names the core client
  through those lazy names where the client is forbidden; no module-level import cycle (type-only
  imports included), read with ``ast`` and shown failing on a breaking file.
"""

from __future__ import annotations

import ast
import configparser
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".importlinter"
PACKAGES = ("bot", "adapters", "cards", "clarify_bot", "devcore", "devslack")
LINT = Path(sys.executable).with_name("lint-imports")
# the core client's names that ``bot.core`` hands out lazily (bot/core/__init__.py)
LAZY_CLIENT_NAMES = ("CoreClient", "BaseCoreClient", "RetryPolicy", "AnswerReceipt",
                     "DEFAULT_TIMEOUT", "UnexpectedResponse")


def contracts() -> dict[str, configparser.SectionProxy]:
    parser = configparser.ConfigParser()
    parser.read(CONFIG, encoding="utf-8")
    prefix = "importlinter:contract:"
    return {name.removeprefix(prefix): parser[name] for name in parser.sections()
            if name.startswith(prefix)}


def listed(section: configparser.SectionProxy, key: str) -> list[str]:
    return [line.strip() for line in section.get(key, "").splitlines() if line.strip()]


def lint(root: Path, *contract: str) -> subprocess.CompletedProcess[str]:
    """import-linter's command on the tree at ``root`` (it imports from its working folder)."""
    limits = [arg for name in contract for arg in ("--contract", name)]
    return subprocess.run([str(LINT), "--no-cache", "--no-logo", *limits], cwd=root,
                          capture_output=True, text=True, timeout=120)


def modules(root: Path, package: str) -> Iterator[Path]:
    yield from sorted((root / package).rglob("*.py"))


def skeleton(root: Path) -> Path:
    """Every module of the real tree as an empty file, the imports the contracts allow by
    ``ignore_imports`` written into their modules, and the real ``.importlinter``."""
    for package in PACKAGES:
        for path in modules(ROOT, package):
            made = root / path.relative_to(ROOT)
            made.parent.mkdir(parents=True, exist_ok=True)
            made.touch()
    for section in contracts().values():
        for line in listed(section, "ignore_imports"):
            importer, imported = (part.strip() for part in line.split("->"))
            target = root / (importer.replace(".", "/") + ".py")
            target.write_text(target.read_text() + f"import {imported}\n")
    (root / ".importlinter").write_text(CONFIG.read_text(encoding="utf-8"))
    return root


def test_the_tree_keeps_every_contract() -> None:
    run = lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{len(contracts())} kept, 0 broken" in run.stdout


def test_the_skeleton_keeps_every_contract(tmp_path: Path) -> None:
    """What each breaking file below is added to: it alone breaks its contract."""
    run = lint(skeleton(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr


TYPE_ONLY = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    {}\n"
LAZY = "def f():\n    {}\n"
# contract -> (file, source) pairs, each of which alone breaks it
BREAKS: dict[str, list[dict[str, str]]] = {
    "assembled-once": [
        {"bot/engine/bad.py": LAZY.format("from adapters.slack import kit")},
        {"adapters/slack/bad.py": "import clarify_bot.app\n"},
        {"adapters/teams/bad.py": TYPE_ONLY.format("from devcore import core")},
        {"adapters/slack/bad.py": "import devslack.server\n"},
    ],
    "bot-layers": [
        {"bot/core/bad.py": "from bot.engine import views\n"},
        {"bot/engine/bad.py": TYPE_ONLY.format("from bot.interaction import interactions")},
        {"bot/clock_helpers.py": ""},  # placed in no layer
    ],
    "bot-knows-no-platform": [
        {"bot/engine/bad.py": LAZY.format("from slack_sdk import WebClient")},
        {"bot/interaction/bad.py": "import microsoft_agents.activity\n"},
        {"bot/process/worker.py": "from aiohttp import web\n"},  # only the service runs it
    ],
    "adapters-never-call-the-core": [
        {"adapters/slack/bad.py": "from bot.core.client import CoreClient\n"},
        {"adapters/teams/bad.py": LAZY.format("from bot.core import calls")},
    ],
    "platforms-apart": [
        {"adapters/teams/bad.py": "from adapters.slack import payloads\n"},
    ],
    "cards-are-pure": [
        {"cards/bad.py": "import httpx\n"},
        {"cards/bad.py": "from devslack import model\n"},
        {"cards/bad.py": "from bot.engine import views\n"},
        # indirect: through a model that reaches the client
        {"bot/core/models/leak.py": "from bot.core import client\n",
         "cards/bad.py": "from bot.core.models import leak\n"},
    ],
    "standin-apart": [
        {"devslack/bad.py": "from bot.clock import Clock\n"},
        {"devslack/bad.py": LAZY.format("from adapters.slack import payloads")},
        {"devslack/bad.py": TYPE_ONLY.format("import slack_bolt")},
    ],
    "no-cycles": [
        {"bot/engine/first.py": "from bot.engine import second\n",
         "bot/engine/second.py": TYPE_ONLY.format("from bot.engine import first")},
        {"adapters/slack/one.py": "from adapters.slack import two\n",
         "adapters/slack/two.py": LAZY.format("from adapters.slack import one")},
    ],
}


def test_every_contract_is_shown_breaking() -> None:
    assert sorted(BREAKS) == sorted(contracts())


@pytest.mark.parametrize(("contract", "files"), [
    pytest.param(name, files, id=f"{name}-{n}") for name, cases in BREAKS.items()
    for n, files in enumerate(cases)])
def test_the_contract_fails_on_a_breaking_file(tmp_path: Path, contract: str,
                                              files: dict[str, str]) -> None:
    root = skeleton(tmp_path)
    for rel, source in files.items():
        path = root / rel
        path.write_text(path.read_text() + source if path.exists() else source)
    run = lint(root, contract)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "0 kept, 1 broken" in run.stdout, run.stdout + run.stderr


def test_the_cards_contract_names_all_of_bot_but_the_core_models_and_errors() -> None:
    """Of ``bot/`` the cards may reach the core's models only (and the errors they raise):
    every other part is forbidden by name, new ones too."""
    allowed = {"bot.core.models", "bot.core.errors"}
    parts = {child for parent in ("bot", "bot.core") for child in _children(parent)}
    expected = parts - {"bot.core"} - allowed
    named = {m for m in listed(contracts()["cards-are-pure"], "forbidden_modules")
             if m.split(".")[0] == "bot"}
    assert named == expected


def _children(package: str) -> set[str]:
    folder = ROOT / package.replace(".", "/")
    return {f"{package}.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__"} | {
        f"{package}.{p.name}" for p in folder.iterdir() if (p / "__init__.py").exists()}


# ------------------------------------------------------------------ beyond the contracts

def imports(path: Path, root: Path = ROOT) -> Iterator[tuple[str, str | None]]:
    """Each import in the file, anywhere in it (inside functions and under TYPE_CHECKING too),
    as (module, name): name is what a from-import takes from the module, else None."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the file's own package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            yield from ((base, alias.name) for alias in node.names)


def imported(path: Path, root: Path = ROOT) -> set[str]:
    """Every module, and ``module.name`` of each from-import, the file imports."""
    return {f"{module}.{name}" if name else module for module, name in imports(path, root)} | {
        module for module, _ in imports(path, root)}


def test_no_module_names_the_core_client_through_bot_core_where_it_is_forbidden() -> None:
    """``from bot.core import CoreClient`` reads to import-linter as an import of ``bot.core``,
    which the adapters and the cards may import (the models, the errors)."""
    lazy = {f"bot.core.{name}" for name in LAZY_CLIENT_NAMES}
    found = [f"{path.relative_to(ROOT).as_posix()}: {name}" for package in ("adapters", "cards")
             for path in modules(ROOT, package) for name in sorted(imported(path) & lazy)]
    assert found == []


def module_cycles(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[list[str]]:
    """The import cycles between modules (each strongly connected group of two or more),
    type-only and lazy imports included."""
    names: dict[str, Path] = {}
    for package in packages:
        for path in modules(root, package):
            parts = path.relative_to(root).with_suffix("").parts
            names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    edges = {name: _modules_of(path, root, names) - {name} for name, path in names.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(name: str) -> None:  # Tarjan's strongly connected components
        order[name] = low[name] = len(order)
        stack.append(name)
        on_stack.add(name)
        for other in sorted(edges[name]):
            if other not in order:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in on_stack:
                low[name] = min(low[name], order[other])
        if low[name] == order[name]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == name:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for name in sorted(names):
        if name not in order:
            visit(name)
    return sorted(groups)


def _modules_of(path: Path, root: Path, names: dict[str, Path]) -> set[str]:
    """The tree's modules the file imports: ``from a import b`` is an import of the module
    ``a.b`` where there is one (as import-linter reads it), else of ``a``."""
    found = {f"{module}.{name}" if f"{module}.{name}" in names else module
             for module, name in imports(path, root)}
    return found & names.keys()


def test_no_module_import_cycle() -> None:
    assert module_cycles(ROOT) == []


def test_the_cycle_check_catches_a_type_only_cycle(tmp_path: Path) -> None:
    (tmp_path / "bot" / "engine").mkdir(parents=True)
    for rel in ("bot/__init__.py", "bot/engine/__init__.py"):
        (tmp_path / rel).touch()
    (tmp_path / "bot" / "engine" / "first.py").write_text("from bot.engine.second import B\n")
    (tmp_path / "bot" / "engine" / "second.py").write_text(
        TYPE_ONLY.format("from bot.engine.first import A"))
    assert module_cycles(tmp_path, ("bot",)) == [["bot.engine.first", "bot.engine.second"]]


def test_importing_the_cards_loads_no_http_client_or_core_client() -> None:
    """At run time too, not only in the import statements: ``cards/`` needs the core's models,
    and ``bot.core`` loads its client only when asked for it."""
    probe = ("import sys, cards.views, cards.slack, cards.teams; "
             "print(sorted(m for m in ('httpx', 'aiohttp', 'bot.core.client', "
             "'bot.core.calls', 'bot.core.http') "
             "if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr
