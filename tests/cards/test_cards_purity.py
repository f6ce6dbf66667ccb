"""cards/ stays pure: no platform SDKs, no network, no environment, file I/O only in preview."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CARDS = Path(__file__).resolve().parents[2] / "cards"
FORBIDDEN_IMPORTS = {"slack_bolt", "microsoft_agents", "httpx", "aiohttp", "requests", "socket",
                     "urllib", "redis", "subprocess"}


def _imports(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_forbidden_imports_or_environment() -> None:
    """No card module imports a platform SDK or network library, or reads os.environ."""
    for path in CARDS.glob("*.py"):
        source = path.read_text()
        assert not _imports(ast.parse(source)) & FORBIDDEN_IMPORTS, path.name
        assert "os.environ" not in source and "getenv(" not in source, path.name


def test_only_preview_and_catalog_touch_files() -> None:
    """Writing files happens in preview.py; reading only the catalog's own locale files."""
    for path in CARDS.glob("*.py"):
        source = path.read_text()
        if path.name not in {"preview.py", "catalog.py"}:
            assert "open(" not in source and "read_text" not in source, path.name
            assert "write_text" not in source, path.name


def test_importing_cards_loads_no_platform_sdk() -> None:
    """Importing every card module pulls in neither slack_bolt nor microsoft_agents."""
    code = ("import sys, cards.preview, cards.slack, cards.teams, cards.actions;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'slack_bolt', 'microsoft_agents', 'slack_sdk'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
