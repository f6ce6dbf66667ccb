"""``bot/`` decides nothing by a platform's name: no comparison, membership test or mapping key
on ``"slack"`` or ``"teams"`` (what a platform is asked is its own: its channel, its tenant map,
its channel errors), and the core's two alias kinds (``Channel.SLACK``, ``Channel.TEAMS``: the
contract keeps a person's aliases under those names) are read only where the core's aliases are
(routing and its alias precedence).

Outside the rule: ``bot/core`` (the core's contract, which names its channels), ``bot/settings``
(the settings' own ``[slack]`` and ``[teams]`` areas) and ``bot/process/runtime.py`` (the
assembly of an engine: the settings' tenant maps where no mount supplied its own).
"""

from __future__ import annotations

import ast
from pathlib import Path

BOT = Path(__file__).resolve().parents[1] / "bot"
PLATFORM_NAMES = {"slack", "teams"}
OUTSIDE = ("core/", "settings/", "process/runtime.py")
ALIAS_READERS = {"engine/routing.py", "engine/aliases.py"}


def _names(node: ast.AST) -> bool:
    """A platform's name written as a constant, alone or in a tuple, list or set."""
    if isinstance(node, ast.Constant):
        return node.value in PLATFORM_NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names(e) for e in node.elts)
    return False


def _alias_kind(node: ast.AST) -> bool:
    """``Channel.SLACK`` or ``Channel.TEAMS`` (``m.Channel.…``, ``RecordedChannel.…`` too)."""
    if not isinstance(node, ast.Attribute) or node.attr not in ("SLACK", "TEAMS"):
        return False
    owner = node.value
    name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return name.endswith("Channel")


def branching(source: str, *, reads_aliases: bool = False) -> list[str]:
    """Where ``source`` decides by a platform's name: ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(
                _names(n) for n in (node.left, *node.comparators)):
            found.append(f"{node.lineno}: compares with a platform's name")
        elif isinstance(node, ast.Dict) and any(k is not None and _names(k) for k in node.keys):
            found.append(f"{node.lineno}: a mapping keyed by a platform's name")
        elif isinstance(node, ast.MatchValue) and _names(node.value):
            found.append(f"{node.lineno}: a match case on a platform's name")
        elif not reads_aliases and _alias_kind(node):
            found.append(f"{node.lineno}: the core's {node.attr.lower()} alias kind")
    return found


def test_the_check_finds_each_kind_of_platform_branching() -> None:
    bad = ('if user.platform == "teams":\n    pass\n'
           'ok = cb.platform in ("slack", "teams")\n'
           'maps = {"slack": 1}\n'
           'match name:\n    case "slack":\n        pass\n'
           'kind = m.Channel.TEAMS\n')
    assert sorted(int(line.split(":")[0]) for line in branching(bad)) == [1, 3, 4, 6, 8]
    assert branching('if address.platform == name:\n    pass\nx = "teams"\n') == []
    assert branching("kind = m.Channel.TEAMS\n", reads_aliases=True) == []


def test_bot_decides_nothing_by_a_platform_s_name() -> None:
    found = []
    for path in sorted(BOT.rglob("*.py")):
        rel = path.relative_to(BOT).as_posix()
        if rel.startswith(OUTSIDE):
            continue
        found += [f"bot/{rel}:{where}" for where in branching(
            path.read_text(encoding="utf-8"), reads_aliases=rel in ALIAS_READERS)]
    assert found == []
