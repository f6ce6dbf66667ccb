"""Field helpers shared by the settings tables: the frozen ``_Table`` base, validators, and
``_allowed`` fields whose error message says in words what a key accepts.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
)
from pydantic_core import PydanticCustomError

from bot.clock import zone_named
from bot.core.models import Role, Severity

_TENANT = r"^[A-Za-z0-9._:@-]{1,200}$"
_GUID = r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$"


# ---------------------------------------------------------------- field helpers


def _no_bool(value: object) -> object:
    # pydantic's lax mode reads `true` as 1; a boolean in a numeric key is always a mistake.
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    return value


def _csv(value: object) -> object:
    """TOML and the environment write lists as "a,b"; TOML may also use a real list."""
    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, list | tuple):
        cleaned = (i.strip().lower() if isinstance(i, str) else i for i in items)
        return tuple(i for i in cleaned if i != "")
    return value


def _distinct(value: tuple[Any, ...]) -> tuple[Any, ...]:
    if not value or len(set(value)) != len(value):
        raise ValueError("must be non-empty without duplicates")
    return value


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _url(schemes: tuple[str, ...], secret_env: str | None) -> Any:
    """A URL of one of ``schemes``; a password in it is refused, naming the variable that holds
    it (``None``: a public URL, which never carries one)."""

    def check(value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in schemes or not (parts.hostname or parts.scheme == "unix"):
            raise ValueError("bad url")
        if parts.password or (secret_env is None and parts.username):
            where = f" (set {secret_env})" if secret_env else ""
            message = f"a URL without a password{where}"
            raise PydanticCustomError("url_password", message)
        return value

    return AfterValidator(check)


def _allowed(default: Any, allowed: str, **constraints: Any) -> Any:
    """A field whose error message says what is allowed, in words."""
    return Field(default, json_schema_extra={"allowed": allowed}, **constraints)


def _ints(default: int, lo: int, hi: int) -> Any:
    return _allowed(default, f"an integer from {lo} to {hi}", ge=lo, le=hi)


def _seconds(default: float, hi: float) -> Any:
    return _allowed(default, f"a number of seconds greater than 0 and at most {hi:g}", gt=0, le=hi)


def _choice(default: Any, *choices: str) -> Any:
    return _allowed(default, "one of: " + ", ".join(choices))


def _cross(field: str, value: object, allowed: str) -> PydanticCustomError:
    """A cross-field error that still names the one key to change."""
    return PydanticCustomError("cross_field", allowed, {"field": field, "value": value})


def _zone(name: str) -> str:
    """An IANA time zone name (what a person's zone falls back to must be one: an unknown name
    would put every such person in UTC without a word)."""
    if zone_named(name) is None:
        raise ValueError("not an IANA time zone")
    return name


Int = Annotated[int, BeforeValidator(_no_bool)]
ZoneName = Annotated[str, AfterValidator(_zone)]
Num = Annotated[float, BeforeValidator(_no_bool)]
# a platform's name as clarify.channels writes it: which names a build mounts is the assembly's
# word (``clarify_bot.platforms``), so a name no platform answers to is refused there
PlatformName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
Channels = Annotated[
    tuple[PlatformName, ...], BeforeValidator(_csv), AfterValidator(_distinct),
]
Roles = Annotated[tuple[Role, ...], BeforeValidator(_csv), AfterValidator(_distinct)]
MaybeSeverity = Annotated[Severity | None, BeforeValidator(_lower)]
_EXTENSION_WORDS = ("auto", "none", "all")


def _extensions(names: tuple[str, ...]) -> tuple[str, ...]:
    """``auto``, ``none`` or ``all`` alone, or extension names without duplicates."""
    from bot.core.extensions import Extension

    if len(names) == 1 and names[0] in _EXTENSION_WORDS:
        return names
    known = {e.value for e in Extension}
    if not names or len(set(names)) != len(names) or not set(names) <= known:
        raise ValueError("not an extension list")
    return names


ExtensionNames = Annotated[tuple[str, ...], BeforeValidator(_csv), AfterValidator(_extensions)]
TenantId = Annotated[str, Field(pattern=_TENANT)]
Guid = Annotated[str, Field(pattern=_GUID)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

