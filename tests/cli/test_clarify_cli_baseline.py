"""`clarify-bot clarify` against a reference core that serves the baseline contract alone (no
attention list, no history, no erasure, no notes, no list filters beyond state and severity):
each command either works from the baseline or says, in one line, what this core does not
offer. Outputs are validated against the committed schema, as for the full core."""

from __future__ import annotations

import json

import pytest

from bot.core.models import BindingStatus, ClarificationState
from tests.cli.conftest import Cli, LiveCore
from tests.cli.test_clarify_cli import CRITICAL, HIGH, MARIA, NORMAL, SARAH, _conflicted, parsed

pytestmark = pytest.mark.baseline_contract


def test_ls_filters_by_state_and_severity_and_says_what_it_cannot(cli: Cli) -> None:
    """State and severity are the baseline's filters; --document and --since are refused in
    one line instead of listing what does not match."""
    doc = parsed(cli(SARAH, "ls", "--severity", "critical", json_out=True))
    assert [i["id"] for i in doc["items"]] == [CRITICAL]
    assert parsed(cli(SARAH, "ls", "--state", "answered", json_out=True))["items"] == []
    for flag, value in (("--document", "doc-harbor-lease"), ("--since", "2030-01-01")):
        refused = cli(SARAH, "ls", flag, value)
        assert refused.exit_code == 1 and "beyond the baseline contract" in refused.output
        assert len(refused.output.strip().splitlines()) == 1


def test_show_without_the_history_extension_says_so(cli: Cli) -> None:
    shown = cli(SARAH, "show", CRITICAL)
    assert shown.exit_code == 0, shown.output
    assert "not offered by this core (the history extension)" in shown.output
    assert "When does the Northwind" in shown.output
    doc = parsed(cli(SARAH, "show", CRITICAL, json_out=True))
    assert doc.get("history") is None and doc["clarification"]["id"] == CRITICAL


def test_queue_is_put_together_from_the_clarification_list(cli: Cli, live: LiveCore) -> None:
    """The attention set of the spec (conflicted, expired, dead-lettered in any severity; open,
    attested, partially confirmed at high and critical) without GET /v1/attention."""
    doc = parsed(cli(MARIA, "queue", json_out=True))
    assert sorted(i["id"] for i in doc["items"]) == sorted([HIGH, CRITICAL])
    _conflicted(live)
    live.core.records[NORMAL].model.state = ClarificationState.EXPIRED
    doc = parsed(cli(MARIA, "queue", json_out=True))
    assert sorted(i["id"] for i in doc["items"]) == sorted([HIGH, CRITICAL, NORMAL])
    assert "nothing needs a steward" in cli("globex-key-gina-steward", "queue").output


def test_an_override_is_recorded_and_the_note_said_not_kept(cli: Cli, live: LiveCore) -> None:
    """A core without the answer-note extension records the override without the note; the
    command says so rather than pretend it was kept."""
    _conflicted(live)
    text = cli(MARIA, "review", CRITICAL, "--override", "--index", "1", "--note", "clause 14")
    assert text.exit_code == 0, text.output
    assert "note: not kept" in text.output
    record = live.core.records[CRITICAL].model.responses[-1]
    assert (record.responder, record.binding_status, record.note) == (
        "p-maria", BindingStatus.STEWARD_OVERRIDE, None)


def test_erase_without_the_erasure_extension_needs_the_service_token(cli: Cli) -> None:
    """Without the core's erasure nothing checks that the key is a steward's: the bot's part
    needs the operator's service token, and says so in one line without it."""
    env = {"CLARIFY_BOT_STORE__BACKEND": "memory"}
    refused = cli(MARIA, "erase-attribution", "--person", "p-ahmed", "--yes", env=env)
    assert refused.exit_code == 1 and "CLARIFY_BOT_CORE_TOKEN" in refused.output
    done = cli(MARIA, "erase-attribution", "--person", "p-ahmed", "--yes", json_out=True,
               env={**env, "CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme"})
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    assert doc.get("core") is None and doc["aliasesFound"] is True
    assert doc["personId"] == "p-ahmed"
