"""The cause groups of a person not reached, from a skip's reason code and the platform's cause
(pure): the reach report's table and ``clarify_unreachable_people`` group the same way.

A platform's adapter names the group of a refusal it classifies (``bot.channel.ChannelError``'s
``cause``: Slack's ``user_disabled``, a Teams app not installed...); the engine carries it to the
skip's entry (``ReachEntry.cause_group``) and ``cause_of`` takes it as it is. An entry without
one (a row of reach schema 1, or a refusal no adapter classifies) is grouped by the English
words of the platform's cause."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from bot.reach.log import Kind, ReachEntry

# each cause of a person not reached, and what fixes it
FIXES: dict[str, str] = {
    "no_alias": "identity sync: give the person a Slack or Teams alias in the core",
    "ambiguous_alias": "identity sync: one chat identity per person and platform",
    "no_read_permission": "document ACL: grant the person read access to the source",
    "app_not_installed": "Teams setup policy: install the app for them, or pre-install it "
                         "for the tenant (Slack: install it in their workspace)",
    "install_permission_missing": "Teams app installs through Microsoft Graph: grant the bot's "
                                  "Entra app the application permission "
                                  "TeamsAppInstallation.ReadWriteSelfForUser.All with admin "
                                  "consent (docs/teams.md, \"Installing the app for people\")",
    "install_not_own_app": "Teams app installs through Microsoft Graph: teams.catalog_app_id "
                           "must be this bot's app in the tenant's catalog, and the app "
                           "package's webApplicationInfo.id its teams.app_id (docs/teams.md, "
                           "\"Installing the app for people\")",
    "app_blocked_by_policy": "Teams admin centre: allow the app in the permission policy that "
                             "applies to them (and in the org-wide app settings)",
    "no_teams_licence": "the person has no Teams licence (or Teams is off for them): assign "
                        "one, or give them another platform",
    "install_refused": "Microsoft Graph refused to install the Teams app for them: see the "
                       "status and code in the log line teams.install_refused",
    "blocked_or_uninstalled": "ask them to unblock the bot or reinstall the app (Slack: "
                              "reinstall it in the workspace)",
    "deactivated": "the chat account is deactivated: update the person's aliases or the "
                   "ranking",
    "tenant_scope": "tenant scope: map the person's workspace or tenant to this tenant "
                    "(slack.workspaces, teams tenants)",
    "delivery_failed": "the platform refused the message: see the cause in the audit trail",
    "away": "they were away; the question went to the next person: nothing to fix unless it "
            "recurs",
}
CAUSES = tuple(FIXES)
# the groups a platform's adapter names (``bot.channel.ChannelError.cause``)
APP_NOT_INSTALLED = "app_not_installed"
BLOCKED_OR_UNINSTALLED = "blocked_or_uninstalled"
# the Teams app could not be installed for them through Microsoft Graph
# (``adapters.teams.installs``)
INSTALL_PERMISSION_MISSING = "install_permission_missing"
INSTALL_NOT_OWN_APP = "install_not_own_app"
APP_BLOCKED_BY_POLICY = "app_blocked_by_policy"
NO_TEAMS_LICENCE = "no_teams_licence"
INSTALL_REFUSED = "install_refused"
AWAY = "away"  # the person's platform said they were away (``bot.engine.away``)
DEACTIVATED = "deactivated"
_BLOCKED = ("blocked", "uninstalled", "removed the app", "cannot_dm_bot", "token_revoked",
            "channel_not_found")
_DEACTIVATED = ("account_inactive", "user_disabled", "deactivated", "user_not_found")


def cause_of(reason_code: str | None, cause: str | None, group: str | None = None
             ) -> str | None:
    """The cause group of a skip (None: a skip that is no failure to reach them: the daily
    cap, a digest, a decline): by its reason code, else the platform's structured ``group``
    (a code of ``FIXES``), else the words of its ``cause``. A person away is ``away`` by
    the code ``PERSON_AWAY`` or by the group the engine gave the skip (a record whose code is
    the spec's in its place)."""
    if reason_code == "PERSON_AWAY" or group == AWAY:  # the spec's code in its place too
        return AWAY
    if reason_code == "NO_READ_PERMISSION":
        return "no_read_permission"
    if reason_code == "TENANT_SCOPE_MISMATCH":
        return "tenant_scope"
    if reason_code == "ALIAS_AMBIGUOUS":
        return "ambiguous_alias"
    if reason_code not in ("NO_DELIVERY_ALIAS", "DELIVERY_FAILED"):
        return None
    if group in FIXES:
        return group
    said = (cause or "").lower()
    if "not installed" in said:
        return "app_not_installed"
    if any(word in said for word in _BLOCKED):
        return "blocked_or_uninstalled"
    if any(word in said for word in _DEACTIVATED):
        return "deactivated"
    return "no_alias" if reason_code == "NO_DELIVERY_ALIAS" else "delivery_failed"


def unreached(entries: Iterable[ReachEntry]) -> dict[str, set[str]]:
    """The people each cause group kept from being reached (the report's cause table): every
    skip with a cause group, a person once per group."""
    people: dict[str, set[str]] = defaultdict(set)
    for e in entries:
        if e.kind is not Kind.SKIPPED:
            continue
        group = cause_of(e.reason_code, e.cause, e.cause_group)
        if group is not None:
            people[group].add(e.person_id)
    return dict(people)
