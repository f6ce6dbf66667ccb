"""Teams settings: the app types and what each needs, anonymous only for a local run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_settings import GUID, failure, load

OTHER = "0f1e2d3c-4b5a-4968-8776-655443322110"


@pytest.mark.parametrize(("toml", "password"), [
    (f'app_type = "single-tenant"\napp_id = "{GUID}"\napp_tenant_id = "{OTHER}"', True),
    (f'app_type = "multi-tenant"\napp_id = "{GUID}"', True),
    (f'app_type = "managed-identity"\napp_id = "{GUID}"\napp_tenant_id = "{OTHER}"', False),
])
def test_each_app_type_names_the_secret_it_needs(tmp_path: Path, toml: str,
                                                 password: bool) -> None:
    """Single- and multi-tenant apps need TEAMS_APP_PASSWORD; a managed identity needs none."""
    settings = load(tmp_path, f'[clarify]\nchannels = "teams"\n[teams]\n{toml}\n')
    assert ("TEAMS_APP_PASSWORD" in settings.missing_secrets()) is password
    assert settings.teams.connection_problem() is None


@pytest.mark.parametrize("app_type", ["single-tenant", "managed-identity"])
def test_a_tenant_bound_app_needs_its_tenant(tmp_path: Path, app_type: str) -> None:
    """Single-tenant and managed-identity apps without app_tenant_id are refused, by key."""
    error = failure(tmp_path, f'[teams]\napp_type = "{app_type}"\napp_id = "{GUID}"\n')
    assert error.problems[0].key == "teams.app_tenant_id"
    assert app_type in error.problems[0].reason


def test_an_unknown_app_type_is_refused(tmp_path: Path) -> None:
    """The app type is one of three words."""
    error = failure(tmp_path, '[teams]\napp_type = "bot-service"\n')
    assert error.problems[0].key == "teams.app_type"
    assert "single-tenant, multi-tenant, managed-identity" in error.problems[0].reason


def test_anonymous_is_refused_with_an_app_id(tmp_path: Path) -> None:
    """An app id means tokens are checked: anonymous cannot be switched on beside it."""
    error = failure(tmp_path, f'[teams]\nanonymous = true\napp_id = "{GUID}"\n'
                              f'app_tenant_id = "{GUID}"\n')
    assert error.problems[0].key == "teams.anonymous"


def test_anonymous_is_refused_beyond_this_machine(tmp_path: Path) -> None:
    """Anonymous with a server listening on other interfaces is refused: local runs only."""
    error = failure(tmp_path, '[teams]\nanonymous = true\n[server]\nhost = "0.0.0.0"\n')
    assert error.problems[0].key == "teams.anonymous"
    assert load(tmp_path, '[teams]\nanonymous = true\n').teams.connection_problem() is None


def test_no_app_id_and_not_anonymous_cannot_mount(tmp_path: Path) -> None:
    """Without an app id Teams is not mounted unless anonymous is asked for explicitly."""
    problem = load(tmp_path).teams.connection_problem()
    assert problem is not None and problem.key == "teams.app_id"
    assert "teams.anonymous" in problem.reason
