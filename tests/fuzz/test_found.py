"""What the fuzz tests found, each as a plain example (docs/reliability.md, "Fuzzing")."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from bot.core.client import CoreClient, RetryPolicy
from bot.core.errors import CoreError, ServerError, UnexpectedResponse
from bot.settings import SettingsError, load_settings

DEEP = b"[" * 5000 + b"]" * 5000


def _core_answering(status: int, body: bytes) -> CoreClient:
    def core(_: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body,
                              headers={"Content-Type": "application/json"})

    return CoreClient(base_url="http://core.test", token="tok-1",
                      transport=httpx.MockTransport(core), retry=RetryPolicy(max_attempts=1))


async def test_a_success_body_nested_too_deep_is_an_unexpected_response() -> None:
    """Found: json's RecursionError escaped the client (not a ValueError)."""
    async with _core_answering(200, DEEP) as client:
        with pytest.raises(UnexpectedResponse):
            await client.get_job(job_id="job-1")


async def test_an_error_body_nested_too_deep_is_a_server_error() -> None:
    async with _core_answering(500, DEEP) as client:
        with pytest.raises(ServerError) as caught:
            await client.get_job(job_id="job-1")
    assert isinstance(caught.value, CoreError)
    assert "without an error body" in str(caught.value)


def test_a_settings_file_that_is_not_utf8_is_a_settings_error(tmp_path: Path) -> None:
    """Found: UnicodeDecodeError (a ValueError, not an OSError) escaped as a traceback."""
    config = tmp_path / "clarify-bot.toml"
    config.write_bytes(b'[core]\nurl = "\xff"\n')
    with pytest.raises(SettingsError, match="not UTF-8 text"):
        load_settings(config, {})


@pytest.mark.parametrize("nested", ["x = " + "[" * 3000 + "]" * 3000,
                                    "x = " + "{a = " * 3000 + "1" + "}" * 3000])
def test_a_settings_file_nested_too_deep_is_a_settings_error(tmp_path: Path,
                                                             nested: str) -> None:
    """Found: tomllib's RecursionError escaped as a traceback."""
    config = tmp_path / "clarify-bot.toml"
    config.write_text(nested)
    with pytest.raises(SettingsError, match="nested too deeply"):
        load_settings(config, {})
