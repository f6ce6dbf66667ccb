"""The Slack adapter: slack-bolt AsyncApp for callbacks, slack_sdk for delivery."""
