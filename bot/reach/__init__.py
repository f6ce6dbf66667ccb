"""The reach record: who was asked, reminded, skipped (and why), answered, escalated and
dead-lettered, per tenant, workspace, platform and person, kept for ``reach.retention_days``."""
