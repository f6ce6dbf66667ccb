"""The Teams app installed for a person through Microsoft Graph, so that a person with no
conversation can be reached (docs/teams.md, "Installing the app for people").

Where the connector refuses to open a 1:1 chat (the app is not installed for them), the bot
installs its own app for them: ``POST {graph_url}/users/{id}/teamwork/installedApps`` with
``{"teamsApp@odata.bind": "{graph_url}/appCatalogs/teamsApps/{teams.catalog_app_id}"}`` (201
installed, 409 installed already), then waits, within ``WAITS``, for the conversation: the
reference the install's own ``installationUpdate`` stores, or the connector opening the chat
once the install has reached it. Not there within the waits: ``NotYet`` (the engine holds the
job and asks the person again at ``LATER``: their turn is kept, and the delivery key, released
since nothing went out, never gives two cards).

Once per person within ``WINDOW``: a claim in the store (``KeyValues.kv_claim``, shared by
every process) is taken before the POST, so two workers never both install, and the outcome
replaces it. Installs take a token of the tenant's bucket in the store's shared rate buckets
first (``RATE_PER_SECOND``, well inside Graph's Teams limits). Refusals:

- the application permission (``PERMISSION``) missing, read off the token's ``roles`` claim
  (or a 403 while the token says none): no POST, said once as a warning and in ``/readyz``,
  the person ``NotReachable`` naming the permission; asked again after ``HOLD``;
- a 403 saying the app "is not allowed to manage" the catalog app: ``teams.catalog_app_id``
  is not this bot's app (or the package's ``webApplicationInfo`` names another): said once as
  a warning and in ``/readyz``, remembered for the tenant (``HOLD``, in the store);
- another 403 while the token holds it: the app is blocked by a permission policy, remembered
  for the tenant (``HOLD``, in the store);
- the person without Teams (404, or a 403 whose message speaks of a licence): remembered for
  them (``WINDOW``), a lasting ``NotReachable``. A 404 is weighed first: the app's own
  installations for the person are read (``GET .../teamwork/installedApps``, which the same
  permission allows); Teams answering for them means the 404 was the catalog id's (not this
  bot's app in the tenant's catalog), held for the tenant as above;
- 429 (and 408, 425, every 5xx) obey Retry-After (``Graph.call``); one that does not fit its
  budget, a 5xx, a redirect or no answer is ``NotYet`` at the Retry-After's end, never a skip;
- any other 4xx: ``install_refused``, value-free (its status and code in the log).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol, TypeVar

import structlog

from adapters import pacing
from adapters.teams.graph import (
    STARTUP_CHECK_SECONDS,
    SUCCESS,
    Graph,
    GraphRefused,
    in_time,
    served_tokens,
)
from bot.channel import ChannelError, NotReachable, NotYet
from bot.clock import Clock
from bot.metrics import REGISTRY
from bot.reach.causes import (
    APP_BLOCKED_BY_POLICY,
    APP_NOT_INSTALLED,
    INSTALL_NOT_OWN_APP,
    INSTALL_PERMISSION_MISSING,
    INSTALL_REFUSED,
    NO_TEAMS_LICENCE,
)
from bot.settings import TeamsSettings
from bot.store.base import KeyValues, RateBuckets

log = structlog.get_logger("clarify.teams")

# the least privileged application permission for an app installing itself for a user, and
# every one that allows it
PERMISSION = "TeamsAppInstallation.ReadWriteSelfForUser.All"
GRANTS = frozenset({PERMISSION, "TeamsAppInstallation.ReadWriteForUser.All",
                    "TeamsAppInstallation.ReadWriteAndConsentSelfForUser.All",
                    "TeamsAppInstallation.ReadWriteAndConsentForUser.All"})
# (tenant|person) -> the install's state; tenant -> "blocked" or "not_own_app"
NAMESPACE = "teams-install"
WINDOW = timedelta(hours=24)  # one install asked per person, at most, in this long
# a claim taken before the POST lasts this long: a worker killed before Graph answered holds
# the person back no longer than this
CLAIM = timedelta(minutes=5)
# an install Graph confirmed whose chat the connector still does not open after this long: the
# person is not reachable (their turn given up: NO_DELIVERY_ALIAS, app_not_installed)
GIVE_UP = timedelta(minutes=30)
HOLD = timedelta(hours=1)  # a tenant without the permission, the app blocked, or not its own
LATER = timedelta(seconds=60)  # the conversation not there yet: the person asked again then
WAITS = (0.0, 1.0, 2.0, 4.0, 8.0)  # looks for the conversation after an install (15 s in all)
RATE_PER_SECOND = 2.0  # installs per tenant, every process together
BURST = 5
# Graph's answers that say the app is installed for the person: 201 (documented), any other
# 2xx (a proxy's or a later version's word for it), 409 (installed already)
INSTALLED_STATUSES = SUCCESS | {409}
PENDING, INSTALLED, NO_LICENCE, REFUSED, BLOCKED, NOT_OWN_APP = (
    "pending", "installed", "no_licence", "refused", "blocked", "not_own_app")

T = TypeVar("T")


class Store(KeyValues, RateBuckets, Protocol):
    """What installs use of the store: the claims and outcomes, the tenant's bucket."""


class Outcome(StrEnum):
    INSTALLED = "installed"
    ALREADY = "already_installed"
    PERMISSION_MISSING = "permission_missing"
    BLOCKED_BY_POLICY = "blocked_by_policy"
    NOT_OWN_APP = "not_own_app"
    NO_LICENCE = "no_licence"
    THROTTLED = "throttled"
    UNAVAILABLE = "unavailable"
    REFUSED = "refused"


REGISTRY.preset("clarify_teams_installs_total", outcome=Outcome)


class Word(StrEnum):
    """What ``/readyz`` says of installs in one tenant."""

    UNCHECKED = "unchecked"
    OK = "ok"
    MISSING = "missing"  # "missing: <permission>"
    BLOCKED = "blocked_by_policy"
    NOT_OWN_APP = "not_own_app"
    NO_TOKEN = "no_token"


# what a tenant's kept state in the store says (``_tenant_allows``)
TENANT_HOLDS = {BLOCKED: Word.BLOCKED, NOT_OWN_APP: Word.NOT_OWN_APP}


@dataclass
class _Tenant:
    word: Word = Word.UNCHECKED
    held_until: Any = None  # datetime: no install asked in the tenant before then
    said: bool = False  # the missing permission was logged (once a process)


NOT_OPENED = ("the Teams app was installed for this person but Teams does not open a chat with "
              "them: install it for them by hand, or check the app's setup policy")
# what each refusal tells the engine (a skip's reason, without values, and its cause group)
REFUSALS: dict[str, tuple[str, str, bool]] = {
    NO_LICENCE: ("the person has no Microsoft Teams licence (or Teams is off for them): the app "
                 "cannot be installed for them", NO_TEAMS_LICENCE, True),
    REFUSED: ("Microsoft Graph refused to install the Teams app for this person "
              "(teams.install_refused in the log); asked again after a day", INSTALL_REFUSED,
              False),
    Word.MISSING: (f"the Teams app is not installed for this person and the bot may not install "
                   f"it: grant the application permission {PERMISSION} to teams.app_id with "
                   "admin consent", INSTALL_PERMISSION_MISSING, True),
    Word.BLOCKED: ("the Teams app is blocked for this person by an app permission policy: "
                   "allow it in the Teams admin centre", APP_BLOCKED_BY_POLICY, True),
    Word.NOT_OWN_APP: ("the Teams app is not installed for this person and the bot is set to "
                       "install another app: teams.catalog_app_id must be this bot's app",
                       INSTALL_NOT_OWN_APP, True),
    Word.NO_TOKEN: ("the Teams app is not installed for this person and the tenant gives the "
                    "bot no Graph token (consent not given)", APP_NOT_INSTALLED, True),
}


def refusal(state: str | None) -> NotReachable | None:
    """What a kept state (a person's, a tenant's) says of reaching them now (None: try)."""
    if state not in REFUSALS:
        return None
    reason, cause, lasting = REFUSALS[state]
    return NotReachable(reason, lasting=lasting, cause=cause)


@dataclass
class Installer:
    graph: Graph
    store: Store
    settings: TeamsSettings
    clock: Clock
    catalog_app_id: str
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    waits: tuple[float, ...] = WAITS
    _tenants: dict[str, _Tenant] = field(default_factory=dict, repr=False)

    async def reach(self, aad_tenant_id: str, user_id: str,
                    found: Callable[[], Awaitable[T | None]]) -> T:
        """The person's conversation once the app is installed for them: ``found`` gives it
        when it can be had now (None: not yet). Raises NotReachable (the app cannot be
        installed for them) or NotYet (it is being installed)."""
        tenant, user = aad_tenant_id.lower(), user_id.lower()
        await self._tenant_allows(tenant)
        key = f"{tenant}|{user}"
        state = await self.store.kv_get(NAMESPACE, key)
        kept = refusal(state)
        if kept is not None:
            raise kept
        if state is None and await self.store.kv_claim(
                NAMESPACE, key, PENDING, ttl_seconds=int(CLAIM.total_seconds())):
            state = await self._install(tenant, user, key)
        # installed now or by another worker (or installing): the conversation, within a bound
        for delay in self.waits:
            if delay:
                await self.sleep(delay)
            conversation = await found()
            if conversation is not None:
                return conversation
        if _installed_before(state, self.clock.now() - GIVE_UP):
            log.warning("teams.install_no_chat", waited_minutes=GIVE_UP.total_seconds() // 60)
            raise NotReachable(NOT_OPENED, lasting=False, cause=APP_NOT_INSTALLED)
        log.info("teams.install_pending", waited=sum(self.waits))
        raise NotYet("the Teams app is being installed for this person",
                     at=self.clock.now() + LATER)

    async def _tenant_allows(self, tenant: str) -> None:
        state = self._state(tenant)
        now = self.clock.now()
        if state.held_until is not None and now < state.held_until:
            raise _refused(state.word)
        state.held_until = None
        held = await self.store.kv_get(NAMESPACE, tenant)
        if held in TENANT_HOLDS:
            state.word = TENANT_HOLDS[held]
            raise _refused(state.word)
        try:
            token = await self.graph.tokens.token(tenant)
        except GraphRefused as exc:
            raise self._no_token(tenant, exc.code) from None
        except ChannelError:
            raise NotYet("no Graph token now", at=now + LATER) from None
        if token.roles is not None and not token.roles & GRANTS:
            raise self._missing(tenant)
        if token.roles is not None:
            state.word = Word.OK

    async def _install(self, tenant: str, user: str, key: str) -> str:
        """POST the install (the claim is this process's); the outcome replaces the claim, or
        the claim is given back where the person may be installed sooner than the window."""
        await pacing.take(self.store, self.clock, self.sleep, f"teams:{tenant}:installs",
                          rate_per_second=RATE_PER_SECOND, burst=BURST, reserve=0)
        app = f"{self.graph.base_url.rstrip('/')}/appCatalogs/teamsApps/{self.catalog_app_id}"
        try:
            status, _ = await self.graph.call(
                tenant, user, "install", "teamwork/installedApps",
                body={"teamsApp@odata.bind": app}, ok=INSTALLED_STATUSES)
        except GraphRefused as exc:
            raise await self._refusal(tenant, user, key, exc) from None
        except ChannelError as exc:
            await self.store.kv_delete(NAMESPACE, key)
            until = self.graph.throttled_until(tenant, "install")
            outcome = Outcome.THROTTLED if until is not None else Outcome.UNAVAILABLE
            _count(outcome)
            log.warning("teams.install_later", outcome=outcome.value, reason=exc.reason)
            raise NotYet("Microsoft Graph cannot install the Teams app now",
                         at=until or self.clock.now() + LATER) from None
        installed = f"{INSTALLED} {self.clock.now().timestamp():.0f}"
        await self.store.kv_put(NAMESPACE, key, installed,
                                ttl_seconds=int(WINDOW.total_seconds()))
        outcome = Outcome.ALREADY if status == 409 else Outcome.INSTALLED
        _count(outcome)
        log.info("teams.app_installed", outcome=outcome.value)
        return installed

    async def _refusal(self, tenant: str, user: str, key: str, exc: GraphRefused
                       ) -> NotReachable:
        """What Graph's refusal of the install means, kept for the person (``key``) or the
        tenant."""
        window = int(WINDOW.total_seconds())
        if exc.what == "token" or exc.status == 401:  # the tenant's token, not the person
            await self.store.kv_delete(NAMESPACE, key)
            return self._no_token(tenant, exc.code)
        if exc.status == 403 and "not allowed to manage" in exc.said:
            return await self._not_own_app(tenant, key, exc)
        licence = "licen" in exc.said or "not enabled" in exc.said
        if exc.status == 404 and await self._teams_knows(tenant, user, key):
            return await self._not_own_app(tenant, key, exc)
        if exc.status == 404 or (exc.status == 403 and licence):
            await self.store.kv_put(NAMESPACE, key, NO_LICENCE, ttl_seconds=window)
            _count(Outcome.NO_LICENCE)
            log.info("teams.install_no_licence", status=exc.status, code=exc.code)
            return _refused(NO_LICENCE)
        if exc.status == 403 and (exc.roles is None or not exc.roles & GRANTS):
            await self.store.kv_delete(NAMESPACE, key)  # asked again once the tenant allows it
            _count(Outcome.PERMISSION_MISSING)
            return self._missing(tenant)
        if exc.status == 403:
            refused = await self._hold_tenant(tenant, key, BLOCKED, Outcome.BLOCKED_BY_POLICY)
            log.warning("teams.install_blocked_by_policy", tenant=self._key(tenant),
                        code=exc.code, fix="allow the app in the Teams app permission policy "
                        "(docs/teams.md, \"Installing the app for people\")")
            return refused
        await self.store.kv_put(NAMESPACE, key, REFUSED, ttl_seconds=window)
        _count(Outcome.REFUSED)
        log.warning("teams.install_refused", status=exc.status, code=exc.code)
        return _refused(REFUSED)

    async def _teams_knows(self, tenant: str, user: str, key: str) -> bool:
        """Whether Teams answers for the person (their installations of this app read): the
        evidence that an install's 404 was not theirs. Cannot be read now: ``NotYet``, the claim
        given back (no refusal is kept on a guess)."""
        try:
            await self.graph.call(tenant, user, "installed_apps", "teamwork/installedApps")
        except GraphRefused:
            return False
        except ChannelError:
            await self.store.kv_delete(NAMESPACE, key)
            raise NotYet("Microsoft Graph cannot say now whether Teams knows this person",
                         at=self.clock.now() + LATER) from None
        return True

    async def _not_own_app(self, tenant: str, key: str, exc: GraphRefused) -> NotReachable:
        """Graph says the bot's app may not manage the catalog app, or answers 404 for a person
        Teams knows: the catalog id is not this bot's app, every install in the tenant would
        fail the same, so none is asked for ``HOLD`` (every process)."""
        refused = await self._hold_tenant(tenant, key, NOT_OWN_APP, Outcome.NOT_OWN_APP)
        log.warning("teams.install_not_own_app", tenant=self._key(tenant), code=exc.code,
                    setting="teams.catalog_app_id",
                    fix="set teams.catalog_app_id to this bot's app in the tenant's app catalog, "
                        "and webApplicationInfo.id in its package to teams.app_id (docs/teams.md, "
                        "\"Installing the app for people\")")
        return refused

    async def _hold_tenant(self, tenant: str, key: str, kept: str, outcome: Outcome
                           ) -> NotReachable:
        """No install asked in the tenant for ``HOLD``, by any process (``kept`` in the store,
        one of ``TENANT_HOLDS``); the person's claim given back, so they are asked again once
        the hold ends."""
        await self.store.kv_delete(NAMESPACE, key)
        await self.store.kv_put(NAMESPACE, tenant, kept, ttl_seconds=int(HOLD.total_seconds()))
        _count(outcome)
        word = TENANT_HOLDS[kept]
        self._state(tenant).word = word
        return _refused(word)

    # ---------------------------------------------------------------- the tenant's state

    def _missing(self, tenant: str) -> NotReachable:
        state = self._state(tenant)
        state.word, state.held_until = Word.MISSING, self.clock.now() + HOLD
        if not state.said:
            state.said = True
            log.warning("teams.install_permission_missing", permission=PERMISSION,
                        tenant=self._key(tenant),
                        fix=f"grant the application permission {PERMISSION} to teams.app_id "
                            "with admin consent (docs/teams.md, \"Installing the app for "
                            "people\"); until then people without the app are not reached")
        return _refused(Word.MISSING)

    def _no_token(self, tenant: str, code: str | None) -> NotReachable:
        state = self._state(tenant)
        state.word, state.held_until = Word.NO_TOKEN, self.clock.now() + HOLD
        log.info("teams.install_no_token", tenant=self._key(tenant), code=code)
        return _refused(Word.NO_TOKEN)

    async def check(self) -> None:
        """Each served tenant's Graph token asked for once, and its ``roles`` compared with
        ``GRANTS``: a missing permission said once (a warning) and shown in ``/readyz``. Never
        raises."""
        tenants = ((t.aad_tenant_id, t.tenant) for t in self.settings.tenants)
        async for tenant, token in served_tokens(self.graph.tokens, tenants,
                                                 failed="teams.install_check_failed"):
            if isinstance(token, GraphRefused):
                self._no_token(tenant, token.code)
                continue
            if token.roles is None:
                continue  # the token does not say: the first install will
            if token.roles & GRANTS:
                self._state(tenant).word = Word.OK
            else:
                self._missing(tenant)

    async def check_in_time(self, seconds: float = STARTUP_CHECK_SECONDS) -> None:
        await in_time(self.check(), failed="teams.install_check_failed", seconds=seconds)

    def status(self) -> dict[str, object]:
        """What ``/readyz`` shows of installs per served tenant (never unready: without them
        people without the app are simply not reached)."""
        shown: dict[str, str] = {}
        for entry in self.settings.tenants:
            word = self._state(entry.aad_tenant_id.lower()).word
            shown[entry.tenant] = f"missing: {PERMISSION}" if word is Word.MISSING \
                else word.value
        return {"teams_install": shown}

    def _state(self, tenant: str) -> _Tenant:
        return self._tenants.setdefault(tenant, _Tenant())

    def _key(self, tenant: str) -> str | None:
        return self.settings.tenant_for(tenant)


def off_status() -> dict[str, object]:
    """``/readyz`` while installs are off (``teams.install_app = false``, no app id, or no
    ``teams.catalog_app_id``)."""
    return {"teams_install": "off"}


def _installed_before(state: str | None, moment: datetime) -> bool:
    """Whether ``state`` is an install Graph confirmed before ``moment`` (a state written in
    another form, or unreadable, is not)."""
    word, _, stamp = (state or "").partition(" ")
    try:
        return word == INSTALLED and float(stamp) < moment.timestamp()
    except ValueError:
        return False


def _refused(state: str) -> NotReachable:
    found = refusal(state)
    assert found is not None
    return found


def _count(outcome: Outcome) -> None:
    REGISTRY.inc("clarify_teams_installs_total", outcome=outcome.value)
