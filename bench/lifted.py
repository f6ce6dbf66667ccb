"""Run ``clarify-bot`` with the Slack channel's own pacing lifted, for a checkout that predates
``[slack.rates] paced`` (bench/delivery.py --bot-root): its LIMITS table is emptied first."""

import adapters.slack.webapi as channel
from clarify_bot.cli import main

channel.LIMITS.clear()
main()
