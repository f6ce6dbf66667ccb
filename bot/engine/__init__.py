"""The delivery engine: from a leased clarify: job to the right person, or to the steward."""
