"""Cards: pure renderers from view models to Slack Block Kit and Adaptive Card 1.5 JSON.

Every user-visible string comes from the message catalog; see docs/cards.md.
"""
