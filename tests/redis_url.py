"""The Redis server the tests use: 127.0.0.1:6379 unless ``CLARIFY_TEST_REDIS`` names another.

Several checkouts testing on one machine each point this at a server of their own, because the
store's contract suite flushes its database before every test.
"""

from __future__ import annotations

import os

TEST_REDIS = os.environ.get("CLARIFY_TEST_REDIS", "redis://127.0.0.1:6379").rstrip("/")
