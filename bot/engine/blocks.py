"""Remembered blocks: a platform that refused to reach a person is tried last for them.

When a send is refused in a way that will hold for later questions too (Teams: the person blocked
the bot or removed the app, ``MessageWritesBlocked``, or the app is not installed for them; Slack:
no DM can be opened with them, ``channel_not_found``, ``cannot_dm_bot``, a deactivated account),
the refusal is remembered per chat identity for ``BLOCK_TTL_SECONDS``. Later questions try the
person's other platforms first (``clarify.channels`` order among the unblocked ones), and the
blocked one only when every other refuses too. A block ends when it expires or when the person is
seen on that platform again (Teams: installing the app, a conversation update, any 1:1 message;
Slack: opening the App Home or writing to the bot): ``clear``. Refusals that say nothing about
later questions (a Teams 500) fall back for this question only and are not remembered.

The store keeps the reason only (value-free), under a name that is a keyed hash of the platform
and chat user (``bot.store.keys``): nothing in it names the person.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.channel import Address
from bot.store.base import KeyValues

NAMESPACE = "blocked"
BLOCK_TTL_SECONDS = 14 * 24 * 60 * 60  # two weeks: longer than any ranking's escalations
# refusals (a channel's value-free reason, or its start) that hold for later questions too
HOLDING = {
    "slack": ("channel_not_found", "cannot_dm_bot", "user_disabled", "account_inactive",
              "user_not_found", "not_in_channel"),
    "teams": ("MessageWritesBlocked", "ConversationBlockedByUser",
              "the Teams app is not installed"),
}


def holds(platform: str, reason: str | None) -> bool:
    """Whether a refusal on ``platform`` will hold for the person's later questions."""
    return reason is not None and reason.startswith(HOLDING.get(platform, ()))


@dataclass
class Blocks:
    store: KeyValues
    ttl_seconds: int = BLOCK_TTL_SECONDS

    @staticmethod
    def _key(platform: str, user_id: str) -> str:
        return f"{platform}|{user_id.lower()}"

    async def blocked(self, address: Address) -> str | None:
        """The remembered refusal of this address, or None."""
        return await self.store.kv_get(NAMESPACE, self._key(address.platform, address.user_id))

    async def remember(self, address: Address, reason: str) -> None:
        await self.store.kv_put(NAMESPACE, self._key(address.platform, address.user_id),
                                reason[:200], ttl_seconds=self.ttl_seconds)

    async def clear(self, platform: str, user_id: str) -> bool:
        """The person was seen on ``platform`` again: it is tried in its place from now on."""
        return await self.store.kv_delete(NAMESPACE, self._key(platform, user_id))
