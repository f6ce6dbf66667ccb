"""The closed list of reason codes a refused Slack install is audited and logged with.

Whatever reaches the redirect URL is a stranger's input: Slack's ``error`` parameter (``?error=
access_denied`` when a person cancels) can be any text a link carries, ``<script>…`` included.
It never reaches the audit, a log line or a page as it came: ``code`` maps it to one of
``INSTALL_REFUSALS``, and anything else to ``other``.
"""

from __future__ import annotations

OTHER = "other"

# code -> what it means (docs/slack.md lists the same codes)
INSTALL_REFUSALS: dict[str, str] = {
    # the install link (adapters.slack.links)
    "missing": "no install link",
    "malformed": "an install link that is not one",
    "bad_signature": "an install link not signed with this deployment's key",
    "expired": "an expired install link",
    # the OAuth state (Bolt's checks at the redirect)
    "invalid_state": "a state this bot did not issue, already used or expired",
    "invalid_browser": "finished in another browser than it was started in",
    # the binding (adapters.slack.installations)
    "workspace_of_another_tenant": "the workspace or org belongs to another tenant",
    "org_of_another_tenant": "the workspace's org is installed org-wide for another tenant",
    "org_has_workspaces_of_another_tenant":
        "a workspace of the org is installed for another tenant",
    "link_already_used": "the link already installed another workspace or org",
    # Slack's answer at the redirect
    "access_denied": "the person cancelled on Slack's page",
    "missing_code": "a redirect without a code",
    "invalid_code": "a code Slack did not exchange",
    "storage_error": "the installation could not be kept",
    OTHER: "any other error Slack's redirect named (never recorded as it came)",
}


def code(raw: object) -> str:
    """``raw`` if it is a code of the list, else ``other``."""
    return raw if isinstance(raw, str) and raw in INSTALL_REFUSALS else OTHER
