"""Render the Helm chart to the plain manifests committed in deploy/kubernetes/, for those who
deploy without Helm; ``--check`` says whether the committed files are what the chart renders now.

    .venv/bin/python scripts/render_manifests.py           # rewrite deploy/kubernetes/*.yaml
    .venv/bin/python scripts/render_manifests.py --check   # exit 1 if they differ

Rendering uses Helm's own engine (the Go Helm SDK, v4, through the ``helm-python-sdk`` package
from PyPI, pinned in the dev extra): the chart's templates and values exactly as ``helm template
clarify-bot deploy/helm/clarify-bot`` renders them, with no cluster contacted. The release is
``clarify-bot``; the two files are the chart's defaults (``clarify-bot.yaml``) and the
monitoring objects, which need the prometheus-operator's CRDs (``monitoring.yaml``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "deploy" / "helm" / "clarify-bot"
OUT = ROOT / "deploy" / "kubernetes"
RELEASE = "clarify-bot"
MONITORING = {"metrics": {"serviceMonitor": {"enabled": True},
                          "prometheusRule": {"enabled": True},
                          "dashboard": {"enabled": True}}}
MONITORING_KINDS = ("ServiceMonitor", "PrometheusRule")
# the order kubectl should create them in (as helm does: what others refer to first)
KIND_ORDER = ("ServiceAccount", "ConfigMap", "Job", "Service", "Deployment", "PodDisruptionBudget",
              "HorizontalPodAutoscaler", "ServiceMonitor", "PrometheusRule")
HEADER = """\
# {what}
# Rendered from deploy/helm/clarify-bot by scripts/render_manifests.py (release "{release}",
# the chart's default values{extra}); do not edit: change the chart and render again.
# Before applying: create the Secret the pods mount (docs/deploy.md, "Plain manifests"), and
# change the settings ConfigMap (core.url, redis.url, your Slack workspace) and the image.
"""


def documents(values: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The chart's rendered objects as (template, object), in creation order."""
    from helm_python.chart import Chart

    chart = Chart.load(str(CHART))
    rendered = chart.render(values or {}, name=RELEASE, namespace=RELEASE, is_install=True)
    found = [(template, doc) for template, text in rendered.items()
             if template.endswith((".yaml", ".yml"))
             for doc in yaml.safe_load_all(text) if doc]
    return sorted(found, key=lambda item: (KIND_ORDER.index(item[1]["kind"]),
                                           item[1]["metadata"]["name"]))


def files() -> dict[Path, str]:
    """What deploy/kubernetes/ should hold."""
    plain = documents()
    shown = {(d["kind"], d["metadata"]["name"]) for _, d in plain}
    extra = [(t, d) for t, d in documents(MONITORING)
             if (d["kind"], d["metadata"]["name"]) not in shown]
    return {
        OUT / "clarify-bot.yaml": _stream(plain, HEADER.format(
            what="clarify-bot: web and worker Deployments, Services, disruption budgets, settings",
            release=RELEASE, extra="")),
        OUT / "monitoring.yaml": _stream(extra, HEADER.format(
            what="clarify-bot's monitoring: ServiceMonitor and PrometheusRule (prometheus-"
                 "operator CRDs) and the Grafana dashboard",
            release=RELEASE, extra=" with metrics.serviceMonitor, metrics.prometheusRule and "
                                   "metrics.dashboard\n# enabled")),
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the settings file, the dashboard) as literal blocks, readable."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def _stream(docs: list[tuple[str, dict[str, Any]]], header: str) -> str:
    parts = [header]
    for template, doc in docs:
        parts.append(f"---\n# Source: {template}\n"
                     + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100))
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the committed manifests differ from the chart's")
    args = parser.parse_args(argv)
    stale = []
    for path, text in files().items():
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path.relative_to(ROOT))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale (run scripts/render_manifests.py): " + ", ".join(map(str, stale)),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
