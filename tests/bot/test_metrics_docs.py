"""The operator's metric docs, dashboard and alert rules name only metrics the bot exposes, and
the docs name every one it does."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from bot.metrics import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docs" / "alerts" / "clarify-bot.rules.yml"
DASHBOARD = ROOT / "docs" / "grafana" / "clarify-bot.json"
OPERATIONS = ROOT / "docs" / "operations.md"
_NAME = re.compile(r"\b((?:clarify|process|python)_[a-z_]+)\b")
_SUFFIXES = ("_bucket", "_count", "_sum", "_total")


async def exposed() -> set[str]:
    """Every sample name /metrics can show (families with their suffixes)."""
    text = (await REGISTRY.render()).decode()
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(s.name for s in family.samples)
        if family.type == "histogram":
            names.update(family.name + s for s in ("_bucket", "_count", "_sum"))
        if family.type == "counter":  # listed with no sample until a label value is used
            names.add(family.name + "_total")
    return names


def expressions() -> list[str]:
    rules = yaml.safe_load(RULES.read_text())
    found = [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    dashboard = json.loads(DASHBOARD.read_text())
    found += [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    return found


async def test_dashboard_and_alerts_use_only_exposed_metrics() -> None:
    names = await exposed()
    used = {n for expr in expressions() for n in _NAME.findall(expr)}
    assert used, "the rules and the dashboard query something"
    assert not used - names, sorted(used - names)


async def test_operations_doc_names_every_clarify_family() -> None:
    text = (await REGISTRY.render()).decode()
    families = {f.name + ("_total" if f.type == "counter" else "")
                for f in text_string_to_metric_families(text) if f.name.startswith("clarify_")}
    documented = set(_NAME.findall(OPERATIONS.read_text()))
    assert not families - documented, sorted(families - documented)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian: prometheus) "
                    "is not installed; .ci/run installs it where it can")
def test_alert_rules_pass_promtool() -> None:
    run = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_tasks_alert_follows_the_configured_cap(tmp_path: Path) -> None:
    """ClarifyTasksNearCap fires over 80 % of limits.max_outstanding_tasks as the bot exposes
    it (clarify_outstanding_tasks_limit), not at a fixed number: with a cap of 200, 170 tasks
    for 5 minutes fire it and 150 do not (promtool's rule tests evaluate the real rule file)."""
    if shutil.which("promtool") is None:
        pytest.skip("promtool (Debian: prometheus) is not installed")
    [rule] = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]
              if r.get("alert") == "ClarifyTasksNearCap"]
    annotations = {name: text.replace("{{ $labels.platform }}", "slack")
                   for name, text in rule["annotations"].items()}
    spec = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": 'clarify_outstanding_tasks{platform="slack"}', "values": "170x10"},
                {"series": 'clarify_outstanding_tasks{platform="teams"}', "values": "150x10"},
                {"series": "clarify_outstanding_tasks_limit", "values": "200x10"},
            ],
            "alert_rule_test": [{
                "eval_time": "8m", "alertname": "ClarifyTasksNearCap",
                "exp_alerts": [{"exp_labels": {"severity": "ticket", "platform": "slack"},
                                "exp_annotations": annotations}],
            }],
        }],
    }
    path = tmp_path / "tasks_test.yml"
    path.write_text(yaml.safe_dump(spec))
    run = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_unreachable_alert_fires_on_a_doubling(tmp_path: Path) -> None:
    """ClarifyUnreachableJump fires for a cause whose unreachable people doubled against a day
    before (4 to 8), not for one that grew less (5 to 6) nor for a small one (1 to 3), nor for
    the people away (a holiday season: nothing to fix)."""
    if shutil.which("promtool") is None:
        pytest.skip("promtool (Debian: prometheus) is not installed")
    [rule] = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]
              if r.get("alert") == "ClarifyUnreachableJump"]
    annotations = {name: text.replace("{{ $labels.cause }}", "blocked_or_uninstalled")
                   for name, text in rule["annotations"].items()}
    day = 24 * 60  # one-minute samples

    def series(cause: str, before: int, after: int) -> dict[str, str]:
        return {"series": f'clarify_unreachable_people{{cause="{cause}"}}',
                "values": f"{before}x{day} {after}x60"}

    spec = {
        "rule_files": [str(RULES)], "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [series("blocked_or_uninstalled", 4, 8), series("no_alias", 5, 6),
                             series("deactivated", 1, 3), series("away", 4, 12)],
            "alert_rule_test": [{
                "eval_time": f"{day + 45}m", "alertname": "ClarifyUnreachableJump",
                "exp_alerts": [{"exp_labels": {"severity": "ticket",
                                               "cause": "blocked_or_uninstalled"},
                                "exp_annotations": annotations}],
            }],
        }],
    }
    path = tmp_path / "unreachable_test.yml"
    path.write_text(yaml.safe_dump(spec))
    run = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_app_exposes_the_tasks_cap(tmp_path: Path) -> None:
    """The assembled app sets clarify_outstanding_tasks_limit from limits.max_outstanding_tasks."""
    from bot.clock import ManualClock
    from bot.settings.loader import load_settings
    from bot.store.memory import MemoryStore
    from clarify_bot.app import _limits

    settings = load_settings(None, {"CLARIFY_BOT_LIMITS__MAX_OUTSTANDING_TASKS": "123"})
    _limits(settings, MemoryStore(), ManualClock())
    assert REGISTRY.value("clarify_outstanding_tasks_limit") == 123
