"""Whose hours: a person's time zone and their tenant's working hours (issue 26).

The zone comes from the platform first (a channel's optional ``profile``: Slack's
``users.info`` ``tz``, the Teams activity's ``localTimezone``), kept in the store for a day
under a keyed hash of the chat identity; then the core's person record when it names a zone
other than its default UTC; then the tenant's default (``[clarify.hours]``). The rules
themselves are ``bot.engine.hours`` (pure).
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

import structlog

from bot.channel import Address, Channel, ChannelError, CredentialsRejected, Profile
from bot.core import models as m
from bot.engine.hours import WorkingHours, of_tenant, zone_of
from bot.settings.clarify import HoursSettings
from bot.store.base import Store
from bot.store.keys import PROFILE_TTL_SECONDS, PROFILES, profile_key

log = structlog.get_logger("clarify.hours")
PROCESS_SECONDS = 600.0  # a profile read is kept in this process this long (then re-read)
PROCESS_KEPT = 10_000  # profiles kept in this process at most (least recently used go first)


@dataclass
class Zones:
    store: Store
    channels: dict[str, Channel]
    settings: HoursSettings
    monotonic: Callable[[], float] = time.monotonic
    _near: OrderedDict[str, tuple[float, Profile]] = field(default_factory=OrderedDict,
                                                           repr=False)

    async def profile(self, address: Address) -> Profile:
        """The platform's profile of the person at ``address``: from this process when read
        in the last ``PROCESS_SECONDS``, from the store when read in the last day, else asked
        of the platform; an empty one when the platform cannot say."""
        key = profile_key(address.platform, address.user_id)
        near = self._near.get(key)
        if near is not None and self.monotonic() < near[0]:
            self._near.move_to_end(key)
            return near[1]
        found = await self._kept_or_asked(key, address)
        if found is not None:
            self._near[key] = (self.monotonic() + PROCESS_SECONDS, found)
            self._near.move_to_end(key)
            while len(self._near) > PROCESS_KEPT:
                self._near.popitem(last=False)
        return found or Profile()

    def forget(self) -> None:
        """Drop what this process keeps (an erasure run in this process; tests)."""
        self._near.clear()

    async def _kept_or_asked(self, key: str, address: Address) -> Profile | None:
        """The store's profile, else the platform's (then kept a day); None when the platform
        could not be asked now (not kept anywhere: asked again next time)."""
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
            return None
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
