"""Whose hours, and in which zone a person reads every time: one decision (``decide``).

A person's zone is, in this order (docs/delivery.md, "A person's zone"):

1. their platform's (a channel's optional ``profile``: Slack's ``tz`` from its directory of
   the workspace or ``users.info``, the Teams activity's ``localTimezone``), kept in the store
   for a day under a keyed hash of the chat identity (Slack's: in its directory, which it keeps
   itself, ``keeps_profiles``);
2. else the core's person record, when it names a zone other than its default UTC;
3. else the tenant's default (``[clarify.hours]``).

A name that is no IANA zone (``Mars/Olympus``, an empty string, a Windows zone name) counts as
absent at every step (``bot.clock.zone_named``). The hold, the reminder, the card's move-on
line, digests, steward notices and the daily cap's day all take the zone from here
(``Zones.zone``); a card's record keeps the zone it was written in, so every rebuild of it shows
the same local times (``bot.engine.views.as_sent``). The rules of the hours themselves are
``bot.engine.hours`` (pure).

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

from bot.channel import Address, Channel, ChannelError, CredentialsRejected, Profile, Profiles
from bot.clock import zone_named
from bot.core.models import Person
from bot.engine.hours import WorkingHours, of_tenant
from bot.settings.clarify import HoursSettings
from bot.store.base import KeyValues
from bot.store.keys import PROFILE_TTL_SECONDS, PROFILES, profile_key

log = structlog.get_logger("clarify.hours")
PROCESS_SECONDS = 600.0  # a profile read is kept in this process this long (then re-read)
PROCESS_KEPT = 10_000  # profiles kept in this process at most (least recently used go first)
PATIENCE_SECONDS = 2.0  # how long a card waits for the platform to tell a profile
RETRY_SECONDS = 60  # a question whose person's zone is unknown now is looked at again then
UTC_ZONE = ZoneInfo("UTC")


def decide(platform: str | None, core: str | None, default: str | None) -> ZoneInfo:
    """A person's zone: the one their platform names, else the one the core's person record
    names (other than its default UTC), else the tenant's default, else UTC. A name that is
    no IANA zone counts as absent at each step (``bot.clock.zone_named``): an invalid zone
    from Slack leaves the core's zone in force, not the tenant's default."""
    return zone_named(platform) or core_zone(core) or zone_named(default) or UTC_ZONE


def core_zone(name: str | None) -> ZoneInfo | None:
    """The zone the core's person record names, when it names one other than its default UTC
    (a baseline core names none)."""
    return None if name == "UTC" else zone_named(name)


@dataclass(frozen=True, slots=True)
class PersonZone:
    """A person's zone as decided now (``decide``). ``told`` False: their platform could not
    tell it now and the core names none, so ``zone`` is the tenant's default: good for the
    words of a message that goes anyway, never for holding a question to (it is looked at
    again in ``RETRY_SECONDS``)."""

    zone: ZoneInfo
    told: bool = True

    @property
    def name(self) -> str:
        """The IANA name, as a card's viewer and its record keep it."""
        return self.zone.key


@dataclass
class Zones:
    store: KeyValues
    channels: dict[str, Channel]
    settings: HoursSettings
    monotonic: Callable[[], float] = time.monotonic
    _near: OrderedDict[str, tuple[float, Profile]] = field(default_factory=OrderedDict,
                                                           repr=False)
    # profiles the platform could not tell in time, not asked again for as long (so a card's
    # zone and its locale wait for the platform once, not twice)
    _missed: OrderedDict[str, float] = field(default_factory=OrderedDict, repr=False)

    async def profile(self, address: Address) -> Profile:
        """The platform's profile of the person at ``address`` (``lookup``); an empty one when
        the platform cannot say, or cannot say now."""
        return await self.lookup(address) or Profile()

    async def lookup(self, address: Address) -> Profile | None:
        """The platform's profile of the person at ``address``: from this process when read
        in the last ``PROCESS_SECONDS``, from the store when read in the last day, else asked
        of the platform; an empty one when the platform cannot say; None when it cannot be
        told now (the platform failed, or did not answer within ``PATIENCE_SECONDS``, or did
        not a moment ago)."""
        key = profile_key(address.platform, address.user_id)
        near = self._near.get(key)
        if near is not None and self.monotonic() < near[0]:
            self._near.move_to_end(key)
            return near[1]
        missed = self._missed.get(key)
        if missed is not None and self.monotonic() < missed:
            return None
        found = await self._kept_or_asked(key, address)
        if found is None:
            _keep(self._missed, key, self.monotonic() + PATIENCE_SECONDS)
        else:
            self._missed.pop(key, None)
            _keep(self._near, key, (self.monotonic() + PROCESS_SECONDS, found))
        return found

    def forget(self) -> None:
        """Drop what this process keeps (an erasure run in this process; tests)."""
        self._near.clear()
        self._missed.clear()

    async def _kept_or_asked(self, key: str, address: Address) -> Profile | None:
        """The store's profile, else the platform's (then kept a day); None when the platform
        could not be asked now (not kept anywhere: asked again next time). A channel that
        keeps its profiles in the store itself (``keeps_profiles``: Slack's directory of each
        workspace) is asked at once, and nothing is kept here."""
        channel = self.channels.get(address.platform)
        if not isinstance(channel, Profiles):  # the platform keeps no such settings
            return Profile()
        kept_by_channel = getattr(channel, "keeps_profiles", False) is True
        kept = None if kept_by_channel else await self.store.kv_get(PROFILES, key)
        if kept is not None:
            data = json.loads(kept)
            return Profile(time_zone=data.get("tz"), locale=data.get("locale"))
        try:
            found = await asyncio.wait_for(channel.profile(address), PATIENCE_SECONDS)
        except CredentialsRejected:
            raise
        except ChannelError as exc:  # not kept: asked again next time
            log.warning("hours.profile_unknown", platform=address.platform, reason=exc.reason)
            return None
        except TimeoutError:  # paced (a burst of new people): asked again next time
            log.info("hours.profile_later", platform=address.platform)
            return None
        found = found or Profile()
        if kept_by_channel:
            return found
        await self.store.kv_put(PROFILES, key,
                                json.dumps({"tz": found.time_zone, "locale": found.locale}),
                                ttl_seconds=PROFILE_TTL_SECONDS)
        return found

    async def zone(self, tenant_id: str, person: Person, address: Address | None
                   ) -> PersonZone:
        """The person's zone (``decide``) with their platform's profile at ``address`` (none
        without an address); not ``told`` when the platform cannot tell it now and the core
        names none."""
        found = await self.lookup(address) if address is not None else Profile()
        zone = decide(found.time_zone if found is not None else None, person.time_zone,
                      self.default(tenant_id))
        return PersonZone(zone, told=found is not None or core_zone(person.time_zone) is not None)

    def estimate(self, tenant_id: str, person: Person) -> ZoneInfo:
        """The person's zone as known without asking their platform or the store: ``decide``
        with no platform zone (the core's, else the tenant's default)."""
        return decide(None, person.time_zone, self.default(tenant_id))

    def default(self, tenant_id: str) -> str:
        """The tenant's default zone name (``[[clarify.hours.tenants]]``, else
        ``[clarify.hours]``)."""
        return of_tenant(self.settings, tenant_id)[1]

    def hours(self, tenant_id: str) -> WorkingHours:
        """The tenant's working hours."""
        return of_tenant(self.settings, tenant_id)[0]

    @property
    def enabled(self) -> bool:
        """Working hours apply (``[clarify.hours] enabled``)."""
        return self.settings.enabled

    def held(self, tenant_id: str, zone: PersonZone, now: datetime) -> datetime | None:
        """When the next working hour in ``zone`` starts, or None when the person may be asked
        now (also when ``[clarify.hours] enabled`` is off); a zone not ``told``: in a minute."""
        if not self.settings.enabled:
            return None
        if not zone.told:
            return now + timedelta(seconds=RETRY_SECONDS)
        hours = self.hours(tenant_id)
        if hours.open_at(now, zone.zone):
            return None
        return hours.next_open(now, zone.zone)

    async def held_until(self, tenant_id: str, person: Person, address: Address | None,
                         now: datetime) -> datetime | None:
        """``held`` with the person's zone decided now (no platform lookup when the hours are
        off)."""
        if not self.settings.enabled:
            return None
        return self.held(tenant_id, await self.zone(tenant_id, person, address), now)


def _keep[V](kept: OrderedDict[str, V], key: str, value: V) -> None:
    """``kept[key] = value``, the most recent last, at most ``PROCESS_KEPT`` kept."""
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > PROCESS_KEPT:
        kept.popitem(last=False)
