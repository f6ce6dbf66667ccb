"""A person's zone on Teams: the ``localTimezone`` (and ``locale``) of their latest
activity, kept with their conversation reference; the channel's ``profile`` reads it back."""

from __future__ import annotations

from microsoft_agents.activity import Activity

from adapters.teams import references
from bot.channel import Profile
from tests.teams.inbound import SARAH_AAD, TeamsStack
from tests.teams.outbound import Kit, address
from tests.teams.test_teams_handlers import flow


async def test_the_latest_activitys_zone_is_the_persons(teams: TeamsStack, kit: Kit) -> None:
    channel = kit.channel(store=teams.store)
    sarah = address(SARAH_AAD)
    assert await channel.profile(sarah) == Profile()  # never wrote: the tenant's default
    _, steps = flow(teams)
    await steps.send(Activity(type="message", text="hi", local_timezone="America/Chicago",
                              locale="en-US")).start_test()
    assert await channel.profile(sarah) == Profile("America/Chicago", "en-US")
    kept = await teams.store.conversation_get("acme", SARAH_AAD)
    assert kept is not None
    assert references.load_reference(kept).conversation.id == f"a:{SARAH_AAD}"  # still reads
    _, steps = flow(teams)
    await steps.send(Activity(type="message", text="again", local_timezone="Asia/Tokyo",
                              locale="ja-JP")).start_test()
    assert await channel.profile(sarah) == Profile("Asia/Tokyo", "ja-JP")


async def test_an_activity_stating_no_locale_keeps_the_known_one(teams: TeamsStack,
                                                                 kit: Kit) -> None:
    """A conversation update states no ``locale`` or ``localTimezone`` (the Agents Playground
    sends it so when its page loads): the reference is kept again with the zone and locale
    known before; a later activity that states them replaces them."""
    channel = kit.channel(store=teams.store)
    sarah = address(SARAH_AAD)
    _, steps = flow(teams)
    await steps.send(Activity(type="message", text="hi", local_timezone="America/Chicago",
                              locale="en-US")).start_test()
    _, steps = flow(teams)
    await steps.send(Activity(type="conversationUpdate")).start_test()
    assert await channel.profile(sarah) == Profile("America/Chicago", "en-US")
    _, steps = flow(teams)
    await steps.send(Activity(type="message", text="again", locale="de-DE")).start_test()
    assert await channel.profile(sarah) == Profile("America/Chicago", "de-DE")
