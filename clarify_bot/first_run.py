"""`clarify-bot init`: a settings file for a first run, and (``--devcore``) an env file.

The defaults (docs/configuration.md) are for production and stay as they are; a first run needs
other values, so the file written here sets them explicitly, each with the reason beside it: the
memory store (one process, no Redis to start), only the chosen platforms in ``clarify.channels``,
the switch on, Socket Mode (no public address), a higher daily cap (one person trying the loop
receives every question) and console logs; the working hours are written out as the defaults
are, with how to turn them off for a trial at night. Secrets are never written to the settings
file (the loader refuses them there): they are named, with where to get each. With ``--devcore`` the
reference core's development tokens for the tenant and a generated action signing key go into an
env file of mode 0600, so nobody reads a scenario for them; nothing printed ever contains a token.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from bot.settings import SettingsError
from bot.settings.clarify import HoursSettings

# The first-run values and why (docs/quickstart.md, "What init chooses"); defaults elsewhere.
FIRST_RUN_CAP = 50
WHERE = {
    "CLARIFY_BOT_CORE_TOKEN": "the core's service token with audience clarify for your tenant "
                              "(from the core's operators; `init --devcore` writes the reference "
                              "core's)",
    "CLARIFY_BOT_ACTION_SIGNING_KEY": "any random string of 32+ characters you generate, e.g. "
                                      "`python -c 'import secrets; "
                                      "print(secrets.token_urlsafe(32))'`",
    "SLACK_BOT_TOKEN": "api.slack.com/apps → your app → OAuth & Permissions → Bot User OAuth "
                       "Token (xoxb-…), after installing the app",
    "SLACK_SIGNING_SECRET": "api.slack.com/apps → your app → Basic Information → App "
                            "Credentials → Signing Secret",
    "SLACK_APP_TOKEN": "api.slack.com/apps → your app → Basic Information → App-Level Tokens → "
                       "Generate, scope connections:write (xapp-…)",
    "TEAMS_APP_PASSWORD": "the client secret of the Entra app registration named by "
                          "teams.app_id (only when app_id is set)",
}


@dataclass(frozen=True)
class Choices:
    platforms: tuple[str, ...]  # in the order of clarify.channels
    slack_mode: str
    store: str
    core: str
    tenant: str
    slack_team: str | None
    slack_enterprise: str | None
    teams_tenant: str | None

    def secrets_needed(self) -> list[str]:
        """The variables this configuration needs before `serve` starts (Settings agrees)."""
        needed = ["CLARIFY_BOT_CORE_TOKEN", "CLARIFY_BOT_ACTION_SIGNING_KEY"]
        if "slack" in self.platforms:
            needed.append("SLACK_BOT_TOKEN")
            needed.append("SLACK_APP_TOKEN" if self.slack_mode == "socket"
                          else "SLACK_SIGNING_SECRET")
        return needed


def render_settings(c: Choices) -> str:
    """The settings file: every key it sets with a comment; secrets named, never valued."""
    out = [
        "# clarify-bot settings written by `clarify-bot init` for a first run.",
        "# Every key not here keeps its default (clarify-bot.example.toml lists them all;",
        "# docs/configuration.md explains each). Check it with: clarify-bot check-config --config",
        "# <this file>. Secrets are never written here: they are read from the environment only.",
        "#",
        "# Secrets this configuration needs (environment variables) and where to get them:",
        *(f"#   {name}: {WHERE[name]}" for name in c.secrets_needed()),
    ]
    if "teams" in c.platforms:
        out.append("#   TEAMS_APP_PASSWORD, once you set teams.app_id: "
                   + WHERE["TEAMS_APP_PASSWORD"])
    if c.store == "redis":
        out.append("#   REDIS_PASSWORD, only if your Redis asks for one")
    channels = ",".join(c.platforms)
    out += [
        "",
        "[clarify]",
        "# Master switch (default false): on, so the worker leases clarify jobs at once.",
        "enabled = true",
        "# Only the platforms you chose (default \"teams,slack\"), in order of preference.",
        f'channels = "{channels}"',
        "# Questions one person receives per day (default 5). Raised for trying: one person",
        "# receives every question while you try, and the sixth would wait for tomorrow. Put 5",
        "# back (or delete the line) before real people use the bot.",
        f"per_person_daily_cap = {FIRST_RUN_CAP}",
        "# Hours a candidate has to answer before the next one is asked (default 48).",
        "escalation_window_hours = 48",
        "# More than this many questions to one person inside digest_window_minutes become one",
        "# digest (default 3).",
        "digest_threshold = 3",
        *_hours(c),
        "",
        "[core]",
        "# The Telha core's base URL (no credentials; the token is CLARIFY_BOT_CORE_TOKEN).",
        f'url = "{c.core}"',
        "",
        "[store]",
    ]
    if c.store == "memory":
        out += [
            "# memory: one process, nothing to install; state (including answers not yet",
            "# forwarded) is lost when it stops. Use redis for anything real (default redis).",
            'backend = "memory"',
        ]
    else:
        out += [
            "# redis: durable and shared between replicas (the default).",
            'backend = "redis"',
            "",
            "[redis]",
            "# Redis URL without a password (that is REDIS_PASSWORD).",
            'url = "redis://127.0.0.1:6379/0"',
        ]
    out += [
        "",
        "[server]",
        "# Where `serve` listens: health (/healthz, /readyz), metrics, Slack HTTP mode (path",
        "# /slack/events), Teams (/api/messages). A tunnel or proxy forwards to it.",
        'host = "127.0.0.1"',
        "port = 3978",
        "",
        "[log]",
        "# console is for people reading a terminal; production uses json (the default).",
        'format = "console"',
        "# debug, info, warning or error.",
        'level = "info"',
    ]
    if "slack" in c.platforms:
        out += _slack(c)
    if "teams" in c.platforms:
        out += _teams(c)
    return "\n".join(out) + "\n"


def _hours(c: Choices) -> list[str]:
    """``[clarify.hours]`` as the defaults are (docs/delivery.md, "Working hours"), written out
    so that a first try at night is not taken for a broken bot, and a tenant's own hours as a
    commented example."""
    d = HoursSettings()
    example = ["[[clarify.hours.tenants]]", f'tenant = "{c.tenant}"', f'days = "{d.days}"',
               'start = "09:00"', 'end = "17:30"', 'time_zone = "Europe/Berlin"']
    return [
        "",
        "[clarify.hours]",
        "# Working hours (the defaults, written out): a normal or high question waits for the",
        "# person's next working hour in their own zone (what Slack or Teams says of them, else",
        "# the core's record, else time_zone below); a critical one goes at once. Trying the bot",
        "# in the evening or at a weekend? Nothing arrives until the next working morning: set",
        "# enabled = false for the trial, and back to true before real people use the bot.",
        f"enabled = {str(d.enabled).lower()}",
        "# Working days (mon-fri, or e.g. mon,wed,fri) and hours, local time: from start (inside",
        "# the hours) to end (not).",
        f'days = "{d.days}"',
        f'start = "{d.start}"',
        f'end = "{d.end}"',
        "# The zone of a person whose platform and core name none (an IANA name such as",
        "# Europe/Berlin).",
        f'time_zone = "{d.time_zone}"',
        "# A tenant's own hours and default zone, instead of the above for its people:",
        *(f"# {line}" for line in example),
    ]


def _slack(c: Choices) -> list[str]:
    out = [
        "",
        "[slack]",
        "# http: Slack posts to https://<public address>/slack/events (SLACK_SIGNING_SECRET);",
        "# socket: the bot connects out to Slack, no public address (SLACK_APP_TOKEN).",
        f'mode = "{c.slack_mode}"',
        "",
        "# Which Slack workspace belongs to which core tenant. A click from a workspace not listed",
        "# is refused (403), and a person whose Slack id is in an unlisted workspace is skipped.",
    ]
    block = ["[[slack.workspaces]]",
             "# Your workspace id (T…): the T… part of app.slack.com/client/T…/… in a browser."]
    block.append(f'team_id = "{c.slack_team or "T0123ABCD"}"')
    block.append("# Enterprise Grid only: the org id (E…).")
    if c.slack_enterprise:
        block.append(f'enterprise_id = "{c.slack_enterprise}"')
    else:
        block.append('# enterprise_id = "E0123ABCD"')
    block.append("# The core's tenant id for this workspace.")
    block.append(f'tenant = "{c.tenant}"')
    if c.slack_team is None:
        out.append("# Not written yet: give `init --slack-team T…`, or uncomment and fill in:")
        block = [("# " + line if not line.startswith("#") else line) for line in block]
    return out + block


def _teams(c: Choices) -> list[str]:
    out = [
        "",
        "[teams]",
        "# The bot's Entra app (client) id. Without one the Teams adapter runs unauthenticated,",
        "# for the Microsoft 365 Agents Playground on this machine only (anonymous = true, and",
        "# serve refuses it beyond 127.0.0.1). For Teams: delete `anonymous`, set app_id (and",
        "# TEAMS_APP_PASSWORD).",
        "anonymous = true",
        '# app_id = "00000000-0000-0000-0000-000000000000"',
        '# app_tenant_id = "00000000-0000-0000-0000-000000000000"',
        "",
        "# Which Entra tenant belongs to which core tenant; unlisted tenants are refused.",
    ]
    block = ["[[teams.tenants]]",
             "# Your Entra (AAD) tenant id, a GUID (Entra admin centre → Overview).",
             f'aad_tenant_id = "{c.teams_tenant or "00000000-0000-0000-0000-000000000000"}"',
             "# The core's tenant id for this Entra tenant.",
             f'tenant = "{c.tenant}"']
    if c.teams_tenant is None:
        out.append("# Not written yet: give `init --teams-tenant GUID`, or uncomment and fill in:")
        block = [("# " + line if not line.startswith("#") else line) for line in block]
    return out + block


def devcore_tokens(scenario: str, tenant: str) -> dict[str, str]:
    """The reference core's development tokens for the tenant, read from the scenario."""
    from devcore.scenario import ScenarioError, read_scenario

    try:
        data: dict[str, Any] = read_scenario(scenario)
    except ScenarioError as exc:  # no such bundled scenario, or a file that is not one
        raise click.ClickException(f"--scenario {scenario}: "
                                   f"{str(exc).removeprefix('scenario: ')}") from None
    if tenant not in {t.get("id") for t in data.get("tenants", [])}:
        known = ", ".join(sorted(str(t.get("id")) for t in data.get("tenants", [])))
        raise click.ClickException(f"the scenario has no tenant {tenant!r}; its tenants: {known}")
    service = next((t["token"] for t in data.get("tokens", [])
                    if t.get("audience") == "clarify" and tenant in t.get("tenants", [])), None)
    dev = (data.get("dev", {}).get("tokens") or [None])[0]
    if service is None or dev is None:
        raise click.ClickException(f"the scenario has no clarify service token or no dev token "
                                   f"for tenant {tenant!r}")
    return {"CLARIFY_BOT_CORE_TOKEN": service, "CLARIFY_DEVCORE_DEV_TOKEN": dev}


def render_env(c: Choices, tokens: dict[str, str], config: Path,
               env_file: Path) -> tuple[str, list[str]]:
    """The env file's text and the variables in it that are still empty."""
    lines = [
        "# Written by `clarify-bot init --devcore`. Development credentials for the reference",
        f"# core only, never for production. Load it into a shell: {source(env_file)}",
        "",
        "# The settings file `clarify-bot serve` and `check-config` read.",
        f"CLARIFY_BOT_CONFIG={shlex.quote(str(config.resolve()))}",
        "# The reference core's service token (audience clarify) for tenant " + c.tenant + ".",
        f"CLARIFY_BOT_CORE_TOKEN={shlex.quote(tokens['CLARIFY_BOT_CORE_TOKEN'])}",
        "# The reference core's dev token, for its /dev/v1 endpoints (creating clarifications).",
        f"CLARIFY_DEVCORE_DEV_TOKEN={shlex.quote(tokens['CLARIFY_DEVCORE_DEV_TOKEN'])}",
        "# Signs the references the card buttons carry; generated here, keep it to yourself.",
        f"CLARIFY_BOT_ACTION_SIGNING_KEY={secrets.token_urlsafe(32)}",
    ]
    empty = [name for name in c.secrets_needed() if name.startswith(("SLACK_", "TEAMS_"))]
    for name in empty:
        lines += ["", f"# Fill in: {WHERE[name]}", f"{name}="]
    return "\n".join(lines) + "\n", empty


def source(env_file: Path) -> str:
    """The shell line that exports every variable of the env file."""
    shown = str(env_file) if env_file.is_absolute() else f"./{env_file}"
    return f"set -a; . {shown}; set +a"


def write_new(path: Path, text: str, *, mode: int, force: bool, option: str = "--out") -> None:
    """Write ``text`` with ``mode``; an existing file is refused unless ``force``; a path that
    cannot be written is one line naming ``option`` (never the text)."""
    if path.exists() and not force:
        raise click.ClickException(f"{path} exists; not overwritten (use --force to replace it)")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.fchmod(fd, mode)  # whatever the umask
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        reason = (exc.strerror or type(exc).__name__).lower()
        raise click.ClickException(f"{option} {path}: cannot write it: {reason}") from None


# the settings init's options become, so a refusal names the option, not a scratch file's key
OPTION_OF = {
    "core.url": "--core", "slack.workspaces[0].team_id": "--slack-team",
    "slack.workspaces[0].enterprise_id": "--slack-enterprise",
    "slack.workspaces[0].tenant": "--tenant", "teams.tenants[0].tenant": "--tenant",
    "teams.tenants[0].aad_tenant_id": "--teams-tenant",
}


def _as_options(exc: SettingsError) -> str:
    said = []
    for problem in exc.problems:
        option = OPTION_OF.get(problem.key)
        if option is None:
            said.append(f"{problem.key}: {problem.reason}")
        else:
            given = f" {problem.value}" if problem.value is not None else ""
            said.append(f"{option}{given}: {problem.reason}")
    return "\n".join(said)


@click.command()
@click.option("--platform", type=click.Choice(["slack", "teams", "both"]), default="slack",
              show_default=True, help="The chat platforms to deliver to.")
@click.option("--slack-mode", type=click.Choice(["socket", "http"]), default="socket",
              show_default=True,
              help="socket: the bot connects out to Slack (an app-level token, no public "
                   "address: the shortest first try); http: Slack posts to a public URL.")
@click.option("--store", type=click.Choice(["memory", "redis"]), default="memory",
              show_default=True, help="memory: one process, nothing to install; redis: durable.")
@click.option("--core", default="http://127.0.0.1:8700", show_default=True,
              help="The core's base URL (the reference core's by default).")
@click.option("--tenant", default="acme", show_default=True,
              help="The core tenant your workspace belongs to.")
@click.option("--slack-team", default=None, help="Your Slack workspace id (T…).")
@click.option("--slack-enterprise", default=None, help="Enterprise Grid: your org id (E…).")
@click.option("--teams-tenant", default=None, help="Your Entra tenant id (a GUID).")
@click.option("--devcore", "with_devcore", is_flag=True,
              help="Also write an env file with the reference core's development tokens.")
@click.option("--scenario", default="acme", show_default=True,
              help="With --devcore: the scenario whose tokens to write.")
@click.option("--out", "out", type=click.Path(path_type=Path, dir_okay=False),
              default=Path("clarify-bot.toml"), show_default=True, help="The settings file.")
@click.option("--env-file", type=click.Path(path_type=Path, dir_okay=False),
              default=Path("clarify-bot.env"), show_default=True,
              help="With --devcore: the env file (mode 0600).")
@click.option("--force", is_flag=True, help="Replace files that exist.")
def init(platform: str, slack_mode: str, store: str, core: str, tenant: str,
         slack_team: str | None, slack_enterprise: str | None, teams_tenant: str | None,
         with_devcore: bool, scenario: str, out: Path, env_file: Path, force: bool) -> None:
    """Write a settings file for a first run (and, with --devcore, an env file of tokens)."""
    from bot.settings import load_settings

    platforms = ("slack", "teams") if platform == "both" else (platform,)
    c = Choices(platforms=platforms, slack_mode=slack_mode, store=store, core=core,
                tenant=tenant, slack_team=slack_team, slack_enterprise=slack_enterprise,
                teams_tenant=teams_tenant)
    targets = {"--out": out, "--env-file": env_file} if with_devcore else {"--out": out}
    for option, target in targets.items():
        if target.exists() and not force:
            raise click.ClickException(f"{target} exists; not overwritten (use --force to "
                                       "replace it)")
        folder = target.parent
        if not folder.is_dir():
            raise click.ClickException(f"{option} {target}: the folder {folder} does not exist "
                                       "(create it, or choose another path)")
    text = render_settings(c)
    with tempfile.TemporaryDirectory(prefix="clarify-init-") as scratch:
        check = Path(scratch) / "settings.toml"
        check.write_text(text, encoding="utf-8")
        try:  # what init writes must load: the options become values the loader judges
            load_settings(check, environ={})
        except SettingsError as exc:
            raise click.ClickException(_as_options(exc)) from None
    tokens = devcore_tokens(scenario, tenant) if with_devcore else {}
    write_new(out, text, mode=0o644, force=force, option="--out")
    click.echo(f"wrote {out} (settings, no secrets)")
    still = c.secrets_needed()
    if with_devcore:
        env_text, still = render_env(c, tokens, out, env_file)
        write_new(env_file, env_text, mode=0o600, force=force, option="--env-file")
        click.echo(f"wrote {env_file} (mode 0600: the reference core's development tokens for "
                   f"{tenant}, a generated action signing key, and CLARIFY_BOT_CONFIG)")
    click.echo("")
    if still:
        where = f"in {env_file}" if with_devcore else "in the environment"
        click.echo(f"Still to fill in ({where}):")
        for name in still:
            click.echo(f"  {name}: {WHERE[name]}")
    if "slack" in platforms and slack_team is None:
        click.echo(f"  [[slack.workspaces]] in {out}: your workspace id (or init --slack-team T…)")
    if "teams" in platforms and teams_tenant is None:
        click.echo(f"  [[teams.tenants]] in {out}: your Entra tenant id (or init --teams-tenant)")
    click.echo(f"\nCards wait for working hours (Mon-Fri 08:00-18:00 in each person's zone); "
               f"to try at night or at a weekend, set [clarify.hours] enabled = false in {out}.")
    load = f"{source(env_file)}; " if with_devcore else ""
    click.echo(f"Then: {load}clarify-bot check-config --config {out}")
    click.echo("Step by step, from the Slack app to a card in your DM: docs/quickstart.md")
