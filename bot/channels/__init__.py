"""Platform-free channels: the recording channel for tests and the demo."""
