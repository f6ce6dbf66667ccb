"""The Teams suites' fixtures, gathered: the outbound channel against a fake Bot Connector
(``tests/teams/outbound.py``), the inbound stack behind ``/api/messages`` with tokens signed by a
local key (``tests/teams/inbound.py``), and the engine suite's Redis stores."""

from __future__ import annotations

from tests.engine.conftest import redis_store  # noqa: F401
from tests.teams.inbound import jwks_url, make_teams, teams  # noqa: F401
from tests.teams.outbound import fake, kit  # noqa: F401
