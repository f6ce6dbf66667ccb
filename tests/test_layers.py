"""The layers' import rules, read from every module's source with ``ast`` (docs/architecture.md).

- ``bot/`` decides and knows no platform: no platform SDK (slack_sdk, slack_bolt, the Microsoft
  Agents SDK, botbuilder), no ``adapters``, no ``devcore``, no ``clarify_bot``; aiohttp's web
  server only in ``bot/process/service.py``, which runs it and on which adapters mount their routes.
- ``cards/`` is pure: no httpx, no core client, nothing of ``bot/`` but the contract's models.
- ``adapters/`` translate: they never call the core (no core client, no ``devcore``).

Imports inside functions and under ``TYPE_CHECKING`` count too: a lazy import is still a
dependency.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLATFORM_SDKS = ("slack_sdk", "slack_bolt", "microsoft_agents", "botbuilder", "botframework")
CORE_CLIENTS = ("bot.core.client", "bot.core.CoreClient", "bot.core.BaseCoreClient",
                "devcore.client", "devcore")
# the modules of bot/ allowed aiohttp: the service hosts the web server adapters mount on, and
# the core client's HTTP layer sends over aiohttp's client (docs/performance.md)
WEB_SERVER_HOST = "bot/process/service.py"
CORE_WIRE = "bot/core/wire.py"


def modules(package: str) -> Iterator[Path]:
    yield from sorted((ROOT / package).rglob("*.py"))


def imported(path: Path) -> set[str]:
    """Every module (and ``module.name`` of a from-import) the file imports, anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the file's own package
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def under(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


def broken(package: str, forbidden: tuple[str, ...], *, allow: dict[str, tuple[str, ...]]
           | None = None) -> list[str]:
    """``file: module`` for each import of ``forbidden`` in ``package`` (minus ``allow``)."""
    found = []
    for path in modules(package):
        rel = path.relative_to(ROOT).as_posix()
        permitted = (allow or {}).get(rel, ())
        for name in sorted(imported(path)):
            if under(name, forbidden) and not under(name, permitted):
                found.append(f"{rel}: {name}")
    return found


def test_bot_imports_no_platform_no_adapter_no_devcore() -> None:
    """bot/ imports no platform SDK, no adapter, no reference core and not the composition;
    aiohttp's web server only where the service runs it, its client only under the core client."""
    assert broken("bot", (*PLATFORM_SDKS, "adapters", "devcore", "clarify_bot", "aiohttp"),
                  allow={WEB_SERVER_HOST: ("aiohttp",), CORE_WIRE: ("aiohttp",)}) == []


def test_cards_import_no_http_and_no_core_client() -> None:
    """cards/ is pure: no httpx, aiohttp or platform SDK, and of bot/ only the core's models."""
    assert broken("cards", ("httpx", "aiohttp", *PLATFORM_SDKS, *CORE_CLIENTS)) == []
    outside = [f"{p.relative_to(ROOT).as_posix()}: {n}" for p in modules("cards")
               for n in sorted(imported(p)) if under(n, ("bot",))
               and not under(n, ("bot.core.models",)) and n != "bot.core"]
    assert outside == []


def test_adapters_never_import_the_core_client() -> None:
    """adapters/ translate; whatever needs the core is decided in bot/
    (bot.interaction.interactions)."""
    assert broken("adapters", (*CORE_CLIENTS, "clarify_bot")) == []



@pytest.mark.parametrize("rule", ["bot", "cards", "adapters"])
def test_the_rules_catch_a_forbidden_import(tmp_path: Path, rule: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rule fails on a module that breaks it (a lazy import inside a function counts)."""
    source = {"bot": "def f():\n    from slack_sdk import WebClient\n",
              "cards": "import httpx\n",
              "adapters": "from bot.core.client import CoreClient\n"}[rule]
    (tmp_path / rule).mkdir()
    (tmp_path / rule / "bad.py").write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    forbidden = {"bot": PLATFORM_SDKS, "cards": ("httpx",), "adapters": CORE_CLIENTS}[rule]
    assert broken(rule, forbidden)[:1] == [f"{rule}/bad.py: " + {
        "bot": "slack_sdk", "cards": "httpx", "adapters": "bot.core.client"}[rule]]


def test_importing_the_cards_loads_no_http_client_or_core_client() -> None:
    """At run time too, not only in the import statements: ``cards/`` needs the core's models,
    and ``bot.core`` loads its client only when asked for it."""
    import subprocess
    import sys

    probe = ("import sys, cards.views, cards.slack, cards.teams; "
             "print(sorted(m for m in ('httpx', 'aiohttp', 'bot.core.client', "
             "'bot.core.transport', 'bot.core.wire') "
             "if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr
