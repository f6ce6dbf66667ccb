"""The engine's rig (tests/engine/conftest.py) for the answer path's rules: the reference core
over HTTP on the test's clock, a memory or a Redis store, the engine as production wires it on a
recording channel; no chat platform."""

from tests.engine.conftest import core, make_rig, rig, store  # noqa: F401 (fixtures)
