"""`clarify-bot clarify` against the running reference core: every command, every refusal.

The commands use an API key, never the service token; the core decides (read gate, responder
assertion, steward-only override and erasure) and the CLI shows it. Every ``--json`` output is
validated against the committed schema.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from bot.core.models import (
    AnswerRequest,
    Audience,
    BindingStatus,
    ClarificationState,
    ResponseRecord,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from clarify_bot import steward_output
from tests.cli.conftest import Cli, LiveCore

CRITICAL, NORMAL, HIGH, LOW = "clr-00001", "clr-00002", "clr-00003", "clr-00004"
SARAH, AHMED_CLARIFY = "acme-key-sarah-editor", "dev-clarify-token-acme"
PRIYA, MARIA, UNBOUND = "acme-key-priya-viewer", "acme-key-maria-steward", "acme-key-unbound"
SCHEMA = json.loads(steward_output.SCHEMA_PATH.read_text(encoding="utf-8"))


def parsed(result: Any) -> dict[str, Any]:
    """The command's JSON, checked against the committed schema."""
    doc = json.loads(result.output)
    jsonschema.validate(doc, SCHEMA)
    return doc


def responses(live: LiveCore, clarification_id: str) -> list[ResponseRecord]:
    return list(live.core.records[clarification_id].model.responses)


def test_the_committed_schema_is_current() -> None:
    assert SCHEMA == json.loads(json.dumps(steward_output.schema()))


@pytest.mark.full_contract  # --document, --since, --limit and their paging are extensions
def test_ls_lists_and_filters(cli: Cli) -> None:
    text = cli(SARAH, "ls")
    assert text.exit_code == 0, text.output
    assert [line.split()[0] for line in text.output.splitlines()[1:]] == [
        LOW, HIGH, NORMAL, CRITICAL]
    assert "conflicted" not in text.output and "ClarificationSummary" not in text.output
    doc = parsed(cli(SARAH, "ls", "--severity", "critical", json_out=True))
    assert [i["id"] for i in doc["items"]] == [CRITICAL] and doc["command"] == "ls"
    doc = parsed(cli(SARAH, "ls", "--document", "doc-harbor-lease", json_out=True))
    assert [i["id"] for i in doc["items"]] == [NORMAL]
    doc = parsed(cli(SARAH, "ls", "--state", "answered", json_out=True))
    assert doc["items"] == []
    doc = parsed(cli(SARAH, "ls", "--since", "2030-01-01", json_out=True))
    assert doc["items"] == []
    paged = parsed(cli(SARAH, "ls", "--limit", "2", json_out=True))
    rest = parsed(cli(SARAH, "ls", "--limit", "2", "--cursor", paged["nextCursor"],
                      json_out=True))
    assert [i["id"] for i in paged["items"] + rest["items"]] == [LOW, HIGH, NORMAL, CRITICAL]


@pytest.mark.full_contract  # titles and "redacted" on list items are additive
def test_ls_keeps_the_read_gate(cli: Cli) -> None:
    """Priya (Legal viewer) sees Finance's invoice listed without its title."""
    doc = parsed(cli(PRIYA, "ls", json_out=True))
    invoice = next(i for i in doc["items"] if i["id"] == HIGH)
    assert invoice["redacted"] is True and invoice["documentTitle"] == ""
    assert "(withheld)" in cli(PRIYA, "ls").output


@pytest.mark.full_contract  # the history extension
def test_show_prints_the_delivery_history(cli: Cli, live: LiveCore) -> None:
    """attempt → candidate → outcome or skip reason; events in order; JSON by the schema."""
    job = next(j for j in live.core.jobs.jobs.values()
               if j.payload.clarification_id == CRITICAL)
    assert job.attempts == 0
    shown = cli(SARAH, "show", CRITICAL)
    assert shown.exit_code == 0, shown.output
    assert "delivery history:" in shown.output and "(steward)" in shown.output
    assert "When does the Northwind" in shown.output
    assert "View" not in shown.output and "HistoryAttempt" not in shown.output
    doc = parsed(cli(SARAH, "show", CRITICAL, json_out=True))
    assert [a["outcome"] for a in doc["history"]["attempts"]] == [
        "pending", "not_reached", "not_reached", "not_reached"]
    assert doc["clarification"]["id"] == CRITICAL


def test_show_of_another_tenant_or_unknown_id_is_the_cores_404(cli: Cli) -> None:
    result = cli("globex-key-gina-steward", "show", CRITICAL)
    assert result.exit_code == 1
    assert "404 CLARIFICATION_NOT_FOUND" in result.output
    doc = parsed(cli(SARAH, "show", "clr-99999", json_out=True))
    assert doc["error"]["code"] == "CLARIFICATION_NOT_FOUND"


def test_show_for_a_reader_who_may_not_read_is_redacted(cli: Cli) -> None:
    out = cli(PRIYA, "show", HIGH).output
    assert "withheld" in out and "invoice 7731" not in out.lower()


def test_answer_records_as_the_keys_person_with_channel_cli(cli: Cli, live: LiveCore) -> None:
    doc = parsed(cli(SARAH, "answer", NORMAL, "--index", "1", json_out=True))
    assert (doc["result"]["outcome"], doc["httpStatus"], doc["attestation"]) == (
        "bound", 200, False)
    [record] = responses(live, NORMAL)
    assert (record.responder, record.channel, record.message_ref) == ("p-sarah", "cli", None)


@pytest.mark.full_contract  # "replayed" is additive
def test_answer_by_a_viewer_is_an_attestation_and_says_so(cli: Cli, live: LiveCore) -> None:
    result = cli(PRIYA, "answer", NORMAL, "--text", "Q4 2026")
    assert result.exit_code == 0, result.output
    assert "attestation" in result.output and "viewer" in result.output
    [record] = responses(live, NORMAL)
    assert (record.responder, record.binding_status) == ("p-priya", BindingStatus.ATTESTATION)
    doc = parsed(cli(PRIYA, "answer", NORMAL, "--text", "Q4 2026", json_out=True))
    assert doc["attestation"] is True and doc["result"]["replayed"] is True


def test_answer_as_another_person_is_refused_and_records_nothing(cli: Cli, live: LiveCore
                                                                ) -> None:
    result = cli(SARAH, "answer", CRITICAL, "--index", "0", "--responder", "p-ahmed")
    assert result.exit_code == 1
    assert "403 RESPONDER_ASSERTION_FORBIDDEN" in result.output
    assert responses(live, CRITICAL) == []
    doc = parsed(cli(SARAH, "answer", CRITICAL, "--index", "0", "--responder", "p-ahmed",
                     json_out=True))
    assert doc["error"] == {"code": "RESPONDER_ASSERTION_FORBIDDEN", "status": 403,
                            "message": doc["error"]["message"]}


def test_answer_with_an_unbound_key_is_refused(cli: Cli, live: LiveCore) -> None:
    result = cli(UNBOUND, "answer", CRITICAL, "--index", "0")
    assert result.exit_code == 1 and "PRINCIPAL_REQUIRED" in result.output
    assert responses(live, CRITICAL) == []


@pytest.mark.full_contract  # "boundInterval" on the result is additive
def test_answer_with_dates_sends_the_exclusive_end(cli: Cli, live: LiveCore) -> None:
    doc = parsed(cli(SARAH, "answer", NORMAL, "--date", "2026-07-01", "--to", "2026-09-30",
                     json_out=True))
    assert doc["result"]["boundInterval"] == {"validFrom": "2026-07-01T00:00:00Z",
                                              "validTo": "2026-10-01T00:00:00Z"}


@pytest.mark.parametrize("args", [
    [], ["--index", "0", "--text", "Q3 2026"], ["--to", "2026-01-01"]])
def test_answer_needs_exactly_one_form(cli: Cli, live: LiveCore, args: list[str]) -> None:
    result = cli(SARAH, "answer", CRITICAL, *args)
    assert result.exit_code == 2 and responses(live, CRITICAL) == []


def test_no_api_key_no_call(cli: Cli) -> None:
    result = cli(None, "ls")
    assert result.exit_code == 1 and "CLARIFY_BOT_API_KEY" in result.output


def test_the_service_token_is_not_a_key_for_answers(cli: Cli, live: LiveCore) -> None:
    """Given the bot's service token by mistake, the core refuses an answer without a responder."""
    result = cli(AHMED_CLARIFY, "answer", CRITICAL, "--index", "0")
    assert result.exit_code == 1 and "VALIDATION_FAILED" in result.output
    assert responses(live, CRITICAL) == []


@pytest.mark.full_contract  # attention and history (baseline: test_clarify_cli_baseline.py)
def test_queue_and_review_list_the_attention_set(cli: Cli, live: LiveCore) -> None:
    doc = parsed(cli(MARIA, "queue", json_out=True))
    assert [i["id"] for i in doc["items"]] == [HIGH, CRITICAL] and doc["command"] == "queue"
    assert parsed(cli(MARIA, "review", json_out=True))["items"] == doc["items"]
    assert "nothing needs a steward" in cli("globex-key-gina-steward", "queue").output
    reviewed = cli(MARIA, "review", CRITICAL)
    assert reviewed.exit_code == 0 and "delivery history:" in reviewed.output


def _conflicted(live: LiveCore) -> None:
    """Sarah and Ahmed disagree on the critical question (Ahmed through the bot's token)."""
    from devcore.directory import Token

    bot = Token(value="t", audience=Audience.CLARIFY, tenants=frozenset({"acme"}))
    for who, index in (("p-sarah", 0), ("p-ahmed", 1)):
        live.core.answer(bot, CRITICAL, AnswerRequest(
            answer_index=index, responder=who, rights=Role.EDITOR, channel=ContractChannel.SLACK))
    assert live.core.records[CRITICAL].model.state is ClarificationState.CONFLICTED


@pytest.mark.full_contract  # the answer-note extension
def test_review_override_by_a_steward_binds_with_the_note(cli: Cli, live: LiveCore) -> None:
    _conflicted(live)
    doc = parsed(cli(MARIA, "review", CRITICAL, "--override", "--index", "1", "--note",
                     "Countersignature date governs per clause 14.", json_out=True))
    assert (doc["command"], doc["result"]["outcome"], doc["httpStatus"]) == (
        "override", "steward_override", 200)
    record = responses(live, CRITICAL)[-1]
    assert (record.responder, record.binding_status, record.channel, record.note) == (
        "p-maria", BindingStatus.STEWARD_OVERRIDE, "cli",
        "Countersignature date governs per clause 14.")
    assert CRITICAL not in [i["id"] for i in parsed(cli(MARIA, "queue", json_out=True))["items"]]


def test_review_override_by_a_non_steward_is_refused_and_records_nothing(
    cli: Cli, live: LiveCore
) -> None:
    _conflicted(live)
    before = responses(live, CRITICAL)
    result = cli(SARAH, "review", CRITICAL, "--override", "--index", "1", "--note", "mine")
    assert result.exit_code == 1 and "403 STEWARD_OVERRIDE_FORBIDDEN" in result.output
    assert responses(live, CRITICAL) == before


def test_review_override_needs_a_note(cli: Cli, live: LiveCore) -> None:
    _conflicted(live)
    before = responses(live, CRITICAL)
    for note in ([], ["--note", "  "]):
        result = cli(MARIA, "review", CRITICAL, "--override", "--index", "1", *note)
        assert result.exit_code == 2 and "--note" in result.output
    assert responses(live, CRITICAL) == before


@pytest.mark.full_contract  # the erasure extension
def test_erase_attribution_needs_a_steward_key(cli: Cli, live: LiveCore) -> None:
    env = {"CLARIFY_BOT_STORE__BACKEND": "memory"}
    result = cli(SARAH, "erase-attribution", "--person", "p-ahmed", "--yes", env=env)
    assert result.exit_code == 1 and "403 STEWARD_REQUIRED" in result.output
    doc = parsed(cli(PRIYA, "erase-attribution", "--person", "p-ahmed", "--yes", env=env,
                     json_out=True))
    assert doc["error"]["code"] == "STEWARD_REQUIRED"
    unknown = cli(MARIA, "erase-attribution", "--person", "p-nobody", "--yes", env=env)
    assert unknown.exit_code == 1 and "PERSON_NOT_FOUND" in unknown.output


def test_erase_attribution_asks_first(cli: Cli, live: LiveCore) -> None:
    env = {"CLARIFY_BOT_STORE__BACKEND": "memory"}
    result = cli(MARIA, "erase-attribution", "--person", "p-sarah", env=env, input="n\n")
    assert result.exit_code == 1 and "p-sarah" in json.dumps(
        live.core.records[CRITICAL].model.ranking)


@pytest.mark.full_contract  # the attention extension is the core's steward-scope check
@pytest.mark.parametrize("key", [SARAH, PRIYA, UNBOUND], ids=["editor", "viewer", "unbound"])
def test_review_and_the_queue_need_steward_scope(cli: Cli, live: LiveCore, key: str) -> None:
    """Spec §7: `review` requires steward scope. An editor's, a viewer's and an unbound key
    get a clear one-line refusal for the queue, `review` and `review <id>`, in text and in
    JSON, and see nothing of the queue; `ls` and `show` still work for them."""
    for args in (("queue",), ("review",), ("review", CRITICAL)):
        result = cli(key, *args)
        assert result.exit_code == 1, result.output
        [line] = result.output.strip().splitlines()
        assert line.startswith("Error: clarify ") and "needs steward scope" in line, line
        assert "STEWARD_REQUIRED" in line and HIGH not in line
        doc = parsed(cli(key, *args, json_out=True))
        jsonschema.validate(doc, SCHEMA)
        assert doc["error"]["code"] == "STEWARD_REQUIRED" and doc["error"]["status"] == 403
        assert "items" not in doc
    assert cli(key, "ls").exit_code == 0
    assert cli(key, "show", CRITICAL).exit_code in (0, 1)  # a viewer may be refused the read


@pytest.mark.parametrize("args", [
    ("answer", CRITICAL, "--date", "12/06/2026"),
    ("ls", "--state", "nonsense"),
    ("review", "--override"),
    ("answer", CRITICAL, "--frobnicate"),
    ("ls", "--since", "yesterday"),
], ids=["bad-date", "bad-choice", "override-without-id", "unknown-option", "bad-since"])
def test_usage_errors_are_one_line_and_json_with_json(cli: Cli, args: tuple[str, ...]) -> None:
    """Click's usage errors are one line (no "Usage:" block, no "Try … --help" line), exit 2;
    with --json the same error is the JSON error object on stdout."""
    result = cli(SARAH, *args)
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert line.startswith("Error: ") and "--help`)" in line
    assert "Usage:" not in result.output and "Try '" not in result.output
    doc = json.loads(cli(SARAH, *args, json_out=True).output)
    jsonschema.validate(doc, SCHEMA)
    assert doc["error"]["code"] == "USAGE" and doc["error"]["message"] == line[len("Error: "):]


def test_other_local_refusals_are_json_with_json(cli: Cli) -> None:
    """A refusal before the core is asked (no API key) is one line, and JSON with --json."""
    result = cli(None, "ls")
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    doc = json.loads(cli(None, "ls", json_out=True).output)
    assert doc == {"command": "ls", "error": {"code": "REFUSED", "status": 0,
                                              "message": doc["error"]["message"]}}
    assert "CLARIFY_BOT_API_KEY" in doc["error"]["message"]
