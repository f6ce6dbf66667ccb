"""Whose hours: a person's time zone and their tenant's working hours (issue 26).

The zone comes from the platform first (a channel's optional ``profile``: Slack's
``users.info`` ``tz``, the Teams activity's ``localTimezone``), kept in the store for a day
under a keyed hash of the chat identity; then the core's person record when it names a zone
other than its default UTC; then the tenant's default (``[clarify.hours]``). The rules
themselves are ``bot.engine.hours`` (pure).

The platform is asked with patience (``PATIENCE_SECONDS``): Slack paces ``users.info`` at its
Tier 4 (100 a minute), so a burst of questions to people the bot has not seen today would
otherwise wait on it, a critical card among them. A profile that cannot be told in time is
*unknown now* (not kept; asked again next time): a card is then rendered in the core's locale
for the person, and a question that waits for working hours takes the core's zone, or, when
the core names none, is held ``RETRY_SECONDS`` and looked at again (docs/delivery.md).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
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
PATIENCE_SECONDS = 2.0  # how long a card waits for the platform to tell a profile
RETRY_SECONDS = 60  # a question whose person's zone is unknown now is looked at again then


@dataclass
class Zones:
    store: Store
    channels: dict[str, Channel]
    settings: HoursSettings
    monotonic: Callable[[], float] = time.monotonic
    _near: OrderedDict[str, tuple[float, Profile]] = field(default_factory=OrderedDict,
                                                           repr=False)

    async def profile(self, address: Address) -> Profile:
        """The platform's profile of the person at ``address`` (``lookup``); an empty one when
        the platform cannot say, or cannot say now."""
        return await self.lookup(address) or Profile()

    async def lookup(self, address: Address) -> Profile | None:
        """The platform's profile of the person at ``address``: from this process when read
        in the last ``PROCESS_SECONDS``, from the store when read in the last day, else asked
        of the platform; an empty one when the platform cannot say; None when it cannot be
        told now (the platform failed, or did not answer within ``PATIENCE_SECONDS``)."""
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
        return found

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
            found = await asyncio.wait_for(ask(address), PATIENCE_SECONDS)
        except CredentialsRejected:
            raise
        except ChannelError as exc:  # not kept: asked again next time
            log.warning("hours.profile_unknown", platform=address.platform, reason=exc.reason)
            return None
        except TimeoutError:  # paced (a burst of new people): asked again next time
            log.info("hours.profile_later", platform=address.platform)
            return None
        found = found or Profile()
        await self.store.kv_put(PROFILES, key,
                                json.dumps({"tz": found.time_zone, "locale": found.locale}),
                                ttl_seconds=PROFILE_TTL_SECONDS)
        return found

    async def of(self, tenant_id: str, person: m.Person, address: Address | None
                 ) -> tuple[WorkingHours, ZoneInfo | None]:
        """The person's working hours (their tenant's) and their zone; None for the zone when
        their platform cannot tell it now and the core names none (the tenant's default is a
        guess the platform would have overruled)."""
        hours, default = of_tenant(self.settings, tenant_id)
        found = await self.lookup(address) if address is not None else Profile()
        core = core_zone(person)
        if found is None and core is None:
            return hours, None
        return hours, zone_of((found.time_zone if found else None) or core, default)

    def estimate(self, tenant_id: str, person: m.Person) -> tuple[WorkingHours, ZoneInfo]:
        """The hours and zone as known without asking the platform or the store: the core's
        zone, else the tenant's default."""
        hours, default = of_tenant(self.settings, tenant_id)
        return hours, zone_of(core_zone(person), default)

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
        if zone is None:
            return now + timedelta(seconds=RETRY_SECONDS)
        if hours.open_at(now, zone):
            return None
        return hours.next_open(now, zone)


def core_zone(person: m.Person) -> str | None:
    """The zone the core's person record names, when it names one other than its default UTC
    (a baseline core names none)."""
    return person.time_zone if person.time_zone not in (None, "", "UTC") else None
