"""The Teams hook in the composition: ``teams`` in clarify.channels mounts /api/messages with
the real channel; without an app id (and not anonymous) start-up names teams.app_id."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from adapters.teams.channel import TeamsChannel
from bot.settings import SettingsError
from clarify_bot.app import open_service
from tests.test_settings import GUID, SECRETS, load

BASE = '[store]\nbackend = "memory"\n[clarify]\nchannels = "teams"\n'
# Graph's token endpoint on this machine (nothing answers): the service's background check of
# who-is-away permissions never tries the internet from a test
LOCAL_LOGIN = 'login_url = "http://127.0.0.1:9"\n'


async def test_teams_in_the_channels_mounts_the_endpoint(tmp_path: Path) -> None:
    """The service answers /api/messages (a request without a token: 401) and delivers
    through the Teams channel."""
    settings = load(tmp_path, BASE + '[teams]\n' + LOCAL_LOGIN
                    + f'app_id = "{GUID}"\napp_tenant_id = "{GUID}"\n',
                    **SECRETS)
    async with open_service(settings) as service:
        assert isinstance(service.engine.deliverer.channels["teams"], TeamsChannel)
        server = TestServer(service.web_app, host="127.0.0.1")
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as http:
                response = await http.post(server.make_url("/api/messages"), json={})
                assert response.status == 401
        finally:
            await server.close()


async def test_teams_without_an_app_id_or_anonymous_does_not_start(tmp_path: Path) -> None:
    """Neither an app id nor an explicit local anonymous run: refused, naming the key."""
    settings = load(tmp_path, BASE, **SECRETS)
    with pytest.raises(SettingsError, match="teams.app_id"):
        async with open_service(settings):
            pass


@pytest.mark.parametrize(("app_type", "secret"), [("single-tenant", "teams-Zq5"),
                                                  ("multi-tenant", "teams-Zq5"),
                                                  ("managed-identity", None)])
async def test_the_connector_tokens_are_asked_with_the_apps_secret(
        tmp_path: Path, app_type: str, secret: str | None) -> None:
    """msal gets TEAMS_APP_PASSWORD as the client secret of a client-secret app (without it no
    connector token could ever be had); a managed identity has none to give."""
    from microsoft_agents.authentication.msal import MsalAuth

    settings = load(tmp_path, BASE + '[teams]\n' + LOCAL_LOGIN
                    + f'app_type = "{app_type}"\napp_id = "{GUID}"\n'
                    f'app_tenant_id = "{GUID}"\n', **SECRETS)
    async with open_service(settings) as service:
        channel = service.engine.deliverer.channels["teams"]
        assert isinstance(channel, TeamsChannel)
        tokens = channel.connector.tokens
        assert isinstance(tokens, MsalAuth)
        assert tokens.configuration.CLIENT_SECRET == secret
