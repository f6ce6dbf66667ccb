"""`clarify-bot devcore --people FILE`: the scenario's people mapped to real chat ids.

The mapping is checked through the core's own identity resolution over HTTP (the bot's client),
and every refusal through the CLI, which must fail before anything listens, naming the person and
the field and never the value.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.core import errors as e
from bot.core.client import CoreClient, RetryPolicy
from bot.core.models import ResolvedPerson, SlackIdentity, TeamsIdentity
from clarify_bot.cli import main
from devcore.server import build_core, serve
from tests.conftest import CLARIFY_TOKEN

REAL_USER, REAL_TEAM = "U07REALME", "T07REALWS"
AAD_USER = "3b8e4c1d-1111-4a2b-9c3d-0123456789ab"
AAD_TENANT = "9d2f1e0c-2222-4b3c-8d4e-0123456789cd"

MAPPING = f"""
[p-sarah.slack]
user_id = "{REAL_USER}"
team_id = "{REAL_TEAM}"

[p-sarah.teams]
aad_object_id = "{AAD_USER}"
tenant_id = "{AAD_TENANT}"
"""


def people_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "people.toml"
    path.write_text(text)
    return path


async def resolve(url: str, identity: SlackIdentity | TeamsIdentity) -> ResolvedPerson:
    async with CoreClient(base_url=url, token=CLARIFY_TOKEN,
                          retry=RetryPolicy(max_attempts=1)) as client:
        return await client.resolve_person(tenant_id="acme", identity=identity)


async def test_the_core_resolves_the_real_ids_to_the_mapped_person(tmp_path: Path) -> None:
    core = build_core("acme", people=people_file(tmp_path, MAPPING))
    async with serve(core) as url:
        slack = await resolve(url, SlackIdentity(user_id=REAL_USER, team_id=REAL_TEAM))
        teams = await resolve(url, TeamsIdentity(aad_object_id=AAD_USER, tenant_id=AAD_TENANT))
        assert (slack.person.person_id, slack.verified) == ("p-sarah", True)
        assert teams.person.person_id == "p-sarah"
        with pytest.raises(e.CoreError) as made_up:  # her made-up id no longer resolves
            await resolve(url, SlackIdentity(user_id="U0SARAH", team_id="T0ACME"))
        assert made_up.value.code == "PERSON_NOT_FOUND"
        ahmed = await resolve(url, SlackIdentity(user_id="U0AHMED", team_id="T0ACME"))
        assert ahmed.person.person_id == "p-ahmed"  # people not in the file keep theirs


async def test_an_unverified_person_stays_unverified(tmp_path: Path) -> None:
    path = people_file(tmp_path, f'[p-lee.slack]\nuser_id = "{REAL_USER}"\n'
                                 f'team_id = "{REAL_TEAM}"\n')
    async with serve(build_core("acme", people=path)) as url:
        lee = await resolve(url, SlackIdentity(user_id=REAL_USER, team_id=REAL_TEAM))
        assert (lee.person.person_id, lee.verified) == ("p-lee", False)


@pytest.mark.parametrize(("text", "where", "expected"), [
    (f'[p-nobody.slack]\nuser_id = "{REAL_USER}"\nteam_id = "{REAL_TEAM}"\n',
     "p-nobody", "no such person in the scenario"),
    (f'[p-sarah.slack]\nuser_id = "sarah"\nteam_id = "{REAL_TEAM}"\n',
     "p-sarah.slack.user_id", "expected a Slack member id"),
    (f'[p-sarah.slack]\nuser_id = "{REAL_USER}"\nteam_id = "E07NOTATEAM"\n',
     "p-sarah.slack.team_id", "expected a Slack workspace (team) id"),
    (f'[p-sarah.slack]\nuser_id = "{REAL_USER}"\n', "p-sarah.slack.team_id", "missing"),
    (f'[p-sarah.teams]\naad_object_id = "{AAD_USER}"\n', "p-sarah.teams.tenant_id", "missing"),
    (f'[p-sarah.teams]\naad_object_id = "not-a-guid"\ntenant_id = "{AAD_TENANT}"\n',
     "p-sarah.teams.aad_object_id", "expected the person's Entra (AAD) object id"),
    (f'[p-sarah.slack]\nuser_id = "{REAL_USER}"\nteam_id = "{REAL_TEAM}"\ntoken = "xoxb-1"\n',
     "p-sarah.slack.token", "unknown key"),
    ('[p-sarah]\nemail = "x@example.com"\n', "p-sarah.email", "unknown key"),
    (f'[p-sarah.slack]\nuser_id = "{REAL_USER}"\nteam_id = "{REAL_TEAM}"\n'
     f'[p-ahmed.slack]\nuser_id = "{REAL_USER}"\nteam_id = "{REAL_TEAM}"\n',
     "p-ahmed.slack", "already mapped to p-sarah"),
    ('[p-sarah.slack]\nuser_id = "U0AHMED"\nteam_id = "T0ACME"\n',
     "p-sarah.slack", "the scenario's own alias of p-ahmed"),
    ("", "(whole file)", "maps nobody"),
    ("[p-sarah.slack\n", "people.toml", "not valid TOML"),
])
def test_a_bad_people_file_is_refused_naming_person_and_field(
        tmp_path: Path, text: str, where: str, expected: str) -> None:
    path = people_file(tmp_path, text)
    result = CliRunner().invoke(main, ["devcore", "--people", str(path), "--port", "0"])
    assert result.exit_code == 1, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: people file: ") and where in line and expected in line, line
    for value in ("sarah\"", "E07NOTATEAM", "not-a-guid", "xoxb-1", "x@example.com"):
        assert value not in line


def test_a_missing_people_file_is_one_clear_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["devcore", "--people", str(tmp_path / "none.toml")])
    assert result.exit_code == 1
    assert "people file:" in result.output and "cannot be read" in result.output
