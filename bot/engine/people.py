"""Display names for cards and audit messages, looked up in the core (the bot keeps none)."""

from __future__ import annotations

from collections.abc import Iterable

from bot.core import errors as e
from bot.core.batching import JobScope
from bot.core.client import CoreClient


async def display_names(core: CoreClient, person_ids: Iterable[str], *,
                        tenant_id: str | None = None, scope: JobScope | None = None
                        ) -> dict[str, str]:
    """Each known person's display name by id, looked up once; ids the core refuses are left
    out, so a caller chooses its own fallback (usually the id itself)."""
    names: dict[str, str] = {}
    for person_id in dict.fromkeys(person_ids):
        try:
            person = await core.get_person(person_id=person_id, tenant_id=tenant_id,
                                           scope=scope)
        except e.CoreAPIError:
            continue
        names[person_id] = person.display_name
    return names
