"""Microsoft Graph's times as aware datetimes: a ``dateTimeTimeZone`` whose zone may be an IANA
name, a Windows name (CLDR's mapping, through Babel) or Outlook's ``tzone://Microsoft/Utc``."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

import structlog
from babel.core import get_global

from bot.clock import zone_named

log = structlog.get_logger("clarify.teams")


def graph_time(value: Any) -> datetime | None:
    """A Graph ``dateTimeTimeZone`` ({"dateTime": "2026-12-24T17:00:00.0000000", "timeZone":
    "Pacific Standard Time"}) as an aware time, or None when it holds none. The zone may be an
    IANA name, a Windows name (``zone_of``) or Outlook's ``tzone://Microsoft/Utc``; a zone named
    neither way is taken as UTC (a wrong end by at most a day; better than no end)."""
    if not isinstance(value, dict):
        return None
    raw, zone = value.get("dateTime"), value.get("timeZone")
    if not isinstance(raw, str) or not raw:
        return None
    try:
        moment = datetime.fromisoformat(raw.strip())
    except ValueError:
        return None
    if moment.tzinfo is not None:
        return moment.astimezone(UTC)
    found = zone_of(zone)
    if found is None:
        # an unknown zone: read as UTC, said without the person (the name is Outlook's)
        log.info("teams.away_zone_unknown",
                 zone=zone[:64] if isinstance(zone, str) else type(zone).__name__)
        found = ZoneInfo("UTC")
    return moment.replace(tzinfo=found).astimezone(UTC)


def zone_of(name: Any) -> ZoneInfo | None:
    """The zone an Outlook time zone name names: an IANA name as it is, a Windows name through
    CLDR's table (babel's ``windows_zone_mapping``: "Pacific Standard Time" is
    America/Los_Angeles, "W. Europe Standard Time" Europe/Berlin), Outlook's UTC spellings.
    None for anything else."""
    if not isinstance(name, str) or not name.strip():
        return None
    name = name.strip()
    if name.lower() in ("utc", "tzone://microsoft/utc", "coordinated universal time"):
        return ZoneInfo("UTC")
    found = zone_named(name)
    if found is not None:
        return found
    iana = _windows_zones().get(name)
    if iana is None:
        return None
    named = zone_named(iana)
    if named is not None:
        return named
    try:  # a link the tz database keeps (Asia/Calcutta) but zone_named does not list
        return ZoneInfo(iana)
    except (KeyError, ValueError, OSError):
        return None


@cache
def _windows_zones() -> dict[str, str]:
    mapping = get_global("windows_zone_mapping")
    return {str(k): str(v) for k, v in mapping.items()}
