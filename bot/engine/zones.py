"""Whose hours: a person's time zone and their tenant's working hours (issue 26).

The zone comes from the platform first (a channel's optional ``profile``: Slack's
``users.info`` ``tz``, the Teams activity's ``localTimezone``), kept in the store for a day
under a keyed hash of the chat identity; then the core's person record when it names a zone
other than its default UTC; then the tenant's default (``[clarify.hours]``). The rules
themselves are ``bot.engine.hours`` (pure).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import structlog

from bot.channel import Address, Channel, ChannelError, CredentialsRejected, Profile
from bot.core import models as m
from bot.engine.hours import WorkingHours, of_tenant, zone_of
from bot.pseudonym import digest
from bot.settings.clarify import HoursSettings
from bot.store.base import Store

log = structlog.get_logger("clarify.hours")
PROFILES = "profile"  # kv namespace: keyed hash of platform|user id -> {"tz", "locale"}
PROFILE_TTL_SECONDS = 24 * 3600  # "kept for a day"


@dataclass
class Zones:
    store: Store
    channels: dict[str, Channel]
    settings: HoursSettings

    async def profile(self, address: Address) -> Profile:
        """The platform's profile of the person at ``address``, from the store when it was
        read in the last day; an empty one when the platform cannot say."""
        key = digest(f"{address.platform}|{address.user_id}", purpose="profile")[:40]
        kept = await self.store.kv_get(PROFILES, key)
        if kept is not None:
            data = json.loads(kept)
            return Profile(time_zone=data.get("tz"), locale=data.get("locale"))
        channel = self.channels.get(address.platform)
        ask = getattr(channel, "profile", None)
        if ask is None:
            return Profile()
        try:
            found = await ask(address)
        except CredentialsRejected:
            raise
        except ChannelError as exc:  # not kept: asked again next time
            log.warning("hours.profile_unknown", platform=address.platform, reason=exc.reason)
            return Profile()
        found = found or Profile()
        await self.store.kv_put(PROFILES, key,
                                json.dumps({"tz": found.time_zone, "locale": found.locale}),
                                ttl_seconds=PROFILE_TTL_SECONDS)
        return found

    async def of(self, tenant_id: str, person: m.Person, address: Address | None
                 ) -> tuple[WorkingHours, ZoneInfo]:
        """The person's working hours (their tenant's) and their zone."""
        hours, default = of_tenant(self.settings, tenant_id)
        platform = (await self.profile(address)).time_zone if address is not None else None
        core = person.time_zone if person.time_zone not in (None, "", "UTC") else None
        return hours, zone_of(platform or core, default)

    @property
    def enabled(self) -> bool:
        """Working hours apply (``[clarify.hours] enabled``)."""
        return self.settings.enabled

    async def held_until(self, tenant_id: str, person: m.Person, address: Address | None,
                         now: datetime) -> datetime | None:
        """When the person's next working hour starts, or None when they may be asked now
        (also when ``[clarify.hours] enabled`` is off)."""
        if not self.settings.enabled:
            return None
        hours, zone = await self.of(tenant_id, person, address)
        if hours.open_at(now, zone):
            return None
        return hours.next_open(now, zone)
