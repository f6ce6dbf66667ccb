"""The cards' messages of the steward's App Home tabs and reach report, in English, keyed: part of
the catalogs' source, as ``cards/messages.py`` (``scripts/messages.py`` extracts both)."""

from __future__ import annotations

from cards.messages import message, plural

# The steward's App Home tabs (Slack): the attention queue and the reach report's detail.
message("home.tab_queue", "Queue")
message("home.tab_reach", "Reach")

# The reach report: how the questions of a steward's workspaces reached people over a week
# (cards/reach.py). Counts, causes and, in the detail only, the names of the people.
message("reach.title", "Reach this week")
plural("reach.fallback",
       "Reach this week: one question in the workspaces you steward.",
       "Reach this week: {count} questions in the workspaces you steward.")
# TRANSLATORS: {span} is a range of days ("29 Jun – 5 Jul 2026")
message("reach.span", "{span}, in the workspaces you steward")
# TRANSLATORS: one figure of the report ("Questions: 12")
message("reach.fact", "{label}: {value}")
message("reach.label.questions", "Questions")
message("reach.label.asked", "Asked")
message("reach.label.bound", "Bound")
message("reach.label.open", "Still open")
message("reach.label.escalated", "Escalated")
message("reach.label.dead_lettered", "Nobody left to ask")
message("reach.label.bound_before_escalation", "Bound before the first escalation")
message("reach.label.median", "Median time to a bound answer")
# TRANSLATORS: {working} and {wall} are numbers of hours ("3.5")
message("reach.hours_both", "{working} h working time ({wall} h in all)")
message("reach.hours_working", "{working} h working time")
message("reach.hours_wall", "{wall} h in all")
message("reach.unknown", "not known yet")
plural("reach.unreached",
       "One person could not be reached:",
       "{count} people could not be reached:")
# TRANSLATORS: {cause} is the cause's label, {people} and {questions} counts ("2 people")
message("reach.cause_line", "{cause}: {people}, {questions}")
plural("reach.people", "{count} person", "{count} people")
plural("reach.questions", "{count} question", "{count} questions")
plural("reach.more_causes", "…and one more cause.", "…and {count} more causes.")
message("reach.all_reached",
        "Everyone the questions went to could be reached: nothing to fix this week.")
message("reach.open", "See who and how to fix it")
message("reach.note", "The detail (who, and how to fix it) is on the Reach tab of my App Home.")
message("reach.open_home", "Open the Reach tab")

message("reach.detail_title", "Reach report")
message("reach.not_steward",
        "Nothing for you here: this shows how questions reached people in the workspaces a "
        "steward looks after, and you steward no workspace.")
message("reach.unavailable",
        "The reach report cannot be read just now. Please try again in a few minutes.")
message("reach.empty", "No questions went out in the workspaces you steward in these days.")
message("reach.causes_heading", "Who could not be reached, and how to fix it")
message("reach.fix", "Fix: {fix}")
message("reach.cause_counts", "{people}, {questions}")
message("reach.names", "Who: {names}")
plural("reach.more_names", "one more person", "{count} more people")
message("reach.busiest_heading", "The people interrupted most")
message("reach.interruptions",
        "Cards, reminders and digests a person got in a week: median {median}, 95th "
        "percentile {p95}.")
plural("reach.more_people", "…and one more person.", "…and {count} more people.")
message("reach.timings_heading", "Time from the first card to a bound answer, by severity")
# TRANSLATORS: {severity} is "critical", "high"…; {bound} a count ("3 bound")
message("reach.timing", "{severity}: {bound}; median {median}; 90th percentile {p90}")
plural("reach.bound", "{count} bound", "{count} bound")
message("reach.workspaces_heading", "By workspace")
# TRANSLATORS: {workspace} is the workspace's name, {platform} "Slack" or "Teams"
message("reach.workspace", "{workspace} ({platform})")
message("reach.platform_none", "nobody asked")
plural("reach.more_workspaces",
       "…and one more workspace. `clarify-bot report` lists them all.",
       "…and {count} more workspaces. `clarify-bot report` lists them all.")
message("reach.cut", "The rest does not fit here. `clarify-bot report` shows the whole report.")

# each cause of a person not reached (cards.views.REACH_CAUSES): its label, and its fix
message("reach.cause.no_alias", "No chat account known")
message("reach.fix.no_alias", "Give the person a Slack or Teams alias in the identity sync.")
message("reach.cause.ambiguous_alias", "Ambiguous chat account")
message("reach.fix.ambiguous_alias",
        "In the identity sync, give each person one chat account per platform, shared with "
        "nobody.")
message("reach.cause.no_read_permission", "May not read the document")
message("reach.fix.no_read_permission", "Grant the person read access to the document.")
message("reach.cause.app_not_installed", "Teams app not installed")
message("reach.fix.app_not_installed",
        "Install the app for them, or pre-install it through a Teams setup policy.")
message("reach.cause.install_permission_missing", "The bot may not install its Teams app")
message("reach.fix.install_permission_missing",
        "Grant the bot's app the Microsoft Graph permission "
        "TeamsAppInstallation.ReadWriteSelfForUser.All, with admin consent.")
message("reach.cause.install_not_own_app", "The bot is set to install another Teams app")
message("reach.fix.install_not_own_app",
        "Set teams.catalog_app_id to this bot's app in the tenant's app catalog, with "
        "webApplicationInfo.id in its package equal to teams.app_id.")
message("reach.cause.app_blocked_by_policy", "Teams app blocked by a policy")
message("reach.fix.app_blocked_by_policy",
        "Allow the app in the Teams app permission policy that applies to them.")
message("reach.cause.no_teams_licence", "No Teams licence")
message("reach.fix.no_teams_licence",
        "Assign them a Teams licence, or give them another chat platform.")
message("reach.cause.install_refused", "Teams refused to install the app")
message("reach.fix.install_refused",
        "Look up the refusal in the bot's log (teams.install_refused); it may pass on its own.")
message("reach.cause.blocked_or_uninstalled", "Blocked the bot or removed the app")
message("reach.fix.blocked_or_uninstalled",
        "Ask them to unblock the bot or add the app again (Slack: reinstall it in the "
        "workspace).")
message("reach.cause.deactivated", "Chat account deactivated")
message("reach.fix.deactivated", "Update the person's chat aliases, or the ranking.")
message("reach.cause.tenant_scope", "Outside this organisation's workspaces")
message("reach.fix.tenant_scope",
        "Map the person's Slack workspace or Teams tenant to this organisation.")
message("reach.cause.delivery_failed", "The chat service refused the message")
message("reach.fix.delivery_failed",
        "Look up the platform's cause in the audit trail; it often passes on its own.")
message("reach.cause.away", "Away (holiday, illness, out of office)")
message("reach.fix.away",
        "They were away; the question went to the next person. Nothing to fix unless it "
        "recurs.")
