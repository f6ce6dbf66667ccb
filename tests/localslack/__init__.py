"""The local Slack stand-in's own tests (``devslack``). The folder is not named ``devslack``:
pytest puts ``tests/`` first on ``sys.path``, and a ``tests/devslack`` package would stand in
for the shipped one wherever a test imports ``from devslack import …``."""
