"""The contract's prose: what ``bot.core.openapi`` writes beside the schemas.

The info description (authentication, audience fence, tenancy, reads, lists, errors), each
security scheme, each tag, the per-operation notes and the success descriptions. Kept apart from
the builder so that the words can be reviewed as words; changing any of them changes
``bot/contract/openapi.json`` (regenerate with ``python -m bot.core.openapi --write``).
"""

from __future__ import annotations

INFO_DESCRIPTION = """\
The REST contract between the clarify-bot and the Telha core (spec: temporal clarification, \
sections 5-8). JSON bodies are camelCase. Request bodies reject unknown fields (422), at every \
depth; response bodies may grow additively, at every depth, so clients must ignore fields they \
do not know. A response field marked `x-unknown-reads-as` may carry a value beyond its enum (the \
bot reads it as the value given), one marked `x-unknown-items` list items beyond it (dropped).

**Authentication.** `Authorization: Bearer <token>`; see the security schemes for the token \
kinds. A missing or unknown token is 401 `UNAUTHENTICATED`; a token whose audience may not call \
an endpoint is 403 `AUDIENCE_FORBIDDEN`.

**Audience fence.** A `clarify` token leases only `clarify:` job kinds; an `ingest` token never \
does (403 `JOB_KIND_FORBIDDEN`), and it may call no other endpoint here.

**Tenancy.** Everything is stored per tenant, facts included: ids are only unique within a \
tenant. A resource of a tenant outside the token's scope is 404 (existence is not leaked); \
naming such a tenant explicitly (people resolve and lookup, fact reads, list filter, dev create) \
is 403 `TENANT_SCOPE_MISMATCH`.

**Reads.** The clarify audience reads the full clarification (the bot gates each delivery); an API \
key reads it in full only when its person passes the same source read check the bot uses, \
otherwise (and always for a key bound to no person) it gets the redacted view (`redacted: true`).

**Lists.** Keyset paging: `nextCursor` is the position of the last item shown, so items created \
between two pages are never repeated and none is skipped.

**Errors.** Every error body is `ErrorBody` `{code, message, status, details?}`; messages and \
validation `details` never echo input values or caller-chosen keys (`loc` is a schema path; an \
unknown field is reported at its parent). Malformed JSON is 400 `MALFORMED_BODY`, a body over \
1 MiB is 413 `PAYLOAD_TOO_LARGE`, a schema violation is 422 `VALIDATION_FAILED`, an unknown path \
is 404 `ROUTE_NOT_FOUND` and a wrong method is 405 `METHOD_NOT_ALLOWED`. 429 `RATE_LIMITED` \
(refused: nothing was done, so any call may be sent again) and 503 `UNAVAILABLE` may carry \
`Retry-After`, in seconds or as an HTTP date.
"""

SECURITY_SCHEMES: dict[str, str] = {
    "clarifyToken": (
        "Service token with audience `clarify` (the clarify-bot), scoped to a list of tenant "
        "ids. Leases `clarify:` jobs, reads clarifications and people, and answers on behalf "
        "of a verified responder (it must assert `responder` and `rights`)."
    ),
    "apiKey": (
        "Tenant API key. Bound to a principal (tenant, person, role) it may read and answer "
        "as that principal only; unbound (tenant only) it may read but answering is 403 "
        "`PRINCIPAL_REQUIRED`. Asserting another `responder`, any `rights`, a chat `channel` or "
        "a `messageRef` is 403 `RESPONDER_ASSERTION_FORBIDDEN`; its answers are recorded with "
        "channel `cli`. It reads a clarification in full only when its person may read the "
        "source; otherwise, and always when unbound, it gets the redacted view."
    ),
    "ingestToken": (
        "Service token with audience `ingest` (ingestion workers). No operation here accepts "
        "it: other endpoints answer 403 `AUDIENCE_FORBIDDEN`, and poll answers 403 "
        "`JOB_KIND_FORBIDDEN` (the audience fence)."
    ),
    "devToken": "Development token of the reference core; accepted only by `/dev/v1/*`.",
}

TAGS = {
    "jobs": "Leased `clarify:` jobs: one attempt per ranked candidate, then the steward.",
    "clarifications": "Clarification records, answers, delivery and event reports.",
    "people": "Tenant-scoped identity resolution for delivery and responder mapping.",
    "facts": "Bitemporal fact versions (append-only corrections).",
    "steward": "The steward's review surface: attention queue, delivery history, erasure.",
    "dev": "Reference-core controls (dev token only).",
    "meta": "The contract itself and liveness.",
}

NOTES = {
    "pollJobs": (
        "Leases up to `maxJobs` available jobs (visible now, oldest first, tenants in the "
        "token's scope) whose kind starts with one of `kinds`. Audience fence: a `clarify` "
        "token may ask only for prefixes starting with `clarify:`; anything else, and any "
        "`ingest` token, is 403 `JOB_KIND_FORBIDDEN`. `attempts` is 0-based and indexes "
        "`payload.ranking`; `maxAttempts = len(ranking) + 1`, the last attempt being the "
        "redacted steward escalation. Lease expiry without completion is a retryable "
        "failure: attempts + 1, visible again after the per-kind backoff (for "
        "`clarify:temporal` the tenant's escalation window); at `maxAttempts` the job is "
        "dead-lettered."
    ),
    "heartbeatJob": (
        "Extends a held lease from now by `leaseSeconds` when given (which then becomes the "
        "lease's duration), otherwise by the lease's own duration."
    ),
    "advanceJob": (
        "Sets `attempts` to `attempt` inside the lease with no backoff, so a skipped "
        "candidate never burns an escalation window. Advancing to the current attempt is a "
        "no-op; going backwards is 422; beyond `maxAttempts - 1` is 409 `ATTEMPTS_EXHAUSTED`."
    ),
    "expediteJob": (
        "Additive (\"Not me\"): the candidate asked at `attempt` declined, so their "
        "turn is over before its window. Needs no lease and never moves `attempts`: a job "
        "waiting (available) at a later attempt becomes visible now; a job still leased at "
        "`attempt` or before is retried without a backoff when its lease ends; anything else "
        "(already past, completed, dead-lettered) is left as it is. Idempotent."
    ),
    "completeJob": "Marks the job completed; repeating with the same lease token is a no-op.",
    "failJob": (
        "Retryable: attempts + 1 and visible again after the per-kind backoff "
        "(min(base * 2^(n-1), cap)); not retryable: dead-lettered at once."
    ),
    "listJobs": (
        "Oldest first, keyset-paged. `state=dead_lettered&kind=clarify:` lists dead letters "
        "(the steward digest)."
    ),
    "listClarifications": (
        "Newest first, keyset-paged; `cursor` is opaque (take it from `nextCursor`). "
        "`documentTitle` is empty (`redacted: true`) where the caller may not read the source."
    ),
    "getClarification": (
        "The full record for the clarify audience and for an API key whose person may read the "
        "source; otherwise the redacted view (`redacted: true`: no span excerpt, question, "
        "document title, candidate labels or free-form `sourceText`)."
    ),
    "getFact": (
        "Bitemporal read: the version believed at transaction time `asOfTx` (default now); with "
        "`asOfValid`, 404 `FACT_NOT_FOUND` unless that version's validity `[validFrom, "
        "validTo)` contains the instant. `tenantId` is needed only when the logical id exists in "
        "more than one tenant of the token's scope (422 otherwise)."
    ),
    "getFactHistory": (
        "Every version, oldest first; with `asOfValid` only the versions valid at that instant."
    ),
    "answerClarification": (
        "**Responder assertion.** A `clarify` token must send `responder` and `rights` "
        "(missing: 422); any other caller answers as its own principal: a different "
        "`responder`, or any `rights`, is 403 `RESPONDER_ASSERTION_FORBIDDEN` and nothing is "
        "recorded. Only the clarify audience asserts `channel` and `messageRef`: an API key's "
        "answer is recorded with channel `cli` and no message ref, and a key sending `slack`, "
        "`teams` or any `messageRef` is 403 `RESPONDER_ASSERTION_FORBIDDEN`.\n\n"
        "Exactly one of `answerIndex` and `answerCustom`. A free-form answer takes calendar "
        "dates `YYYY-MM-DD` (half-open: `validTo` is exclusive and must be after `validFrom`) or, "
        "without dates, a `sourceText` in a documented textual form; anything else is 422 "
        "`ANSWER_UNNORMALISABLE` (nothing recorded).\n\n**Replays first.** A resent "
        "`requestId`, or the same normalised answer from the same responder, returns the first "
        "outcome with `replayed: true` before any policy check, whatever changed since. With "
        "`respondedAt`, the same answer as the one the responder gave right before or right "
        "after it is a replay, whichever arrives first; another answer between them makes two "
        "responses.\n\n"
        "**Outcome matrix.** 200 `bound` (quorum met, new fact version, "
        "`factVersionTx`) or `steward_override`; 202 `partially_confirmed` "
        "(`quorumRemaining`), `attestation` (rights below the required role), `conflicted` "
        "(binding-capable responses disagree: steward review), `conflicting_attestation` "
        "(disagrees with an answered clarification; the binding stays). An agreeing answer to "
        "an answered clarification from a new responder is 409 `CLARIFY_ALREADY_ANSWERED`."
    ),
    "reportDelivery": "Adds the person to `asked`. Idempotent on `deliveryId`.",
    "listAttention": (
        "What needs a steward (spec changelog v0.8): `conflicted`, `expired` and "
        "`dead_lettered` in any severity; `open`, `attested` and `partially_confirmed` at "
        "`high` and `critical`. Newest first, keyset cursor, the read gate of the list."
    ),
    "getDeliveryHistory": (
        "The clarification's job joined by attempt: attempt N is `ranking[N]`, the last the "
        "steward; each with its outcome (answered, delivered, expired, skipped with its reason "
        "code, pending, not reached) and its events in order. Ids and codes only: no document "
        "text, so every reader gets the same history."
    ),
    "eraseAttribution": (
        "API keys bound to a steward only (else 403 `STEWARD_REQUIRED`; a service token is 403 "
        "`AUDIENCE_FORBIDDEN`). Tombstones the person on every clarification of the tenant: "
        "`asked`, `ranking`, responders, deliveries and event actors become the nil id, message "
        "refs are dropped, response channels become `erased`, job rankings are rewritten and "
        "fact provenance forgets them; answer values, response times, rights at answer time, "
        "binding statuses, quorum state and fact versions survive. Each changed clarification "
        "gains an `attribution_erased` event. Idempotent: a second call reports zeros."
    ),
    "reportEvent": "Appends an audit event (skip, escalation, notice). Idempotent on `eventId`.",
    "resolvePerson": (
        "An alias of a person in another tenant is not found; two persons sharing the alias "
        "are 409 `ALIAS_AMBIGUOUS`. `verified`: the chat identity maps to a verified "
        "enterprise identity (only those bind)."
    ),
    "devCreateClarification": (
        "201 with a new clarification; 200 with `deduplicated: true` when the same (tenant, "
        "document, content hash, span, kind) exists (never reopened)."
    ),
    "devMoveClock": "Send `advanceSeconds` or `set`; moving backwards is 422.",
}

SUCCESS = {
    ("answerClarification", 200): "Bound, or steward override applied.",
    ("answerClarification", 202): (
        "Recorded, not bound: partially_confirmed, attestation, conflicted or "
        "conflicting_attestation."
    ),
    ("devCreateClarification", 200): "Deduplicated: the existing clarification.",
    ("devCreateClarification", 201): "Created.",
}
