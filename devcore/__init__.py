"""devcore."""
