"""A `ServerSpec` to and from the JSON the store keeps, with its secrets revealed or redacted.

The `spec` column holds every secret in clear (a dynamic server must reconnect after a restart);
what leaves the store for display carries `REDACTED` in their place. pydantic's own
`model_dump(mode="json")` writes `**********` for a `SecretStr`, so the store walks the
python dump itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr, TypeAdapter, ValidationError

from mcpstation.config.models import ServerSpec, StdioServerSpec
from mcpstation.errors import StoreError

REDACTED = "**********"  # what pydantic shows for a SecretStr, and what a redacted spec holds

_SPECS: TypeAdapter[ServerSpec] = TypeAdapter(ServerSpec)

JSONValue = Any  # JSON as stored: dict, list, str, int, float, bool or None


def dump_spec(spec: ServerSpec) -> dict[str, JSONValue]:
    """The full spec as JSON, secrets in clear: what the `spec` column holds.

    Fields at their default are left out (the transport, which picks the variant, never is), so a
    later release that drops or renames an unused field still reads the row.
    """
    data = spec.model_dump(mode="python", exclude_defaults=True)
    data["transport"] = spec.transport
    dumped: dict[str, JSONValue] = _walk(data, lambda secret: secret.get_secret_value())
    return dumped


def redacted_json(spec: ServerSpec) -> dict[str, JSONValue]:
    """The spec as JSON with every secret replaced by `REDACTED`."""
    redacted: dict[str, JSONValue] = _walk(spec.model_dump(mode="python"), lambda _secret: REDACTED)
    return redacted


def load_spec(data: Mapping[str, JSONValue], *, name: str) -> ServerSpec:
    """Validate stored JSON back into a `ServerSpec`.

    Raises:
        StoreError: the stored spec no longer validates (written by a release with other fields).
    """
    try:
        return _SPECS.validate_python(data)
    except ValidationError as exc:
        fields = ", ".join(".".join(str(part) for part in error["loc"]) or "<spec>" for error in exc.errors())
        raise StoreError(
            f"the stored spec of dynamic server {name!r} is not valid for this release (fields: {fields}). "
            "Remove the server and add it again."
        ) from None


def redact(spec: ServerSpec) -> ServerSpec:
    """The same spec with every secret value replaced by `REDACTED`."""
    return _SPECS.validate_python(redacted_json(spec))


def keep_redacted_secrets(new: ServerSpec, old: ServerSpec) -> ServerSpec:
    """`new`, where a secret still reading `REDACTED` takes `old`'s value at the same place.

    A caller that edits a spec it got from a listing sends the placeholders back; they must not
    overwrite the stored secrets.
    """
    old_json = dump_spec(old)

    def reveal(path: tuple[str | int, ...], secret: SecretStr) -> JSONValue:
        value = secret.get_secret_value()
        if value != REDACTED:
            return value
        found: Any = old_json
        for part in path:
            if isinstance(found, dict) and part in found:
                found = found[part]
            else:
                return value
        return found

    merged = _walk_with_path(new.model_dump(mode="python"), reveal, ())
    return _SPECS.validate_python(merged)


def audit_detail(spec: ServerSpec) -> dict[str, JSONValue]:
    """What a management audit row says about a spec: how it is reached, never its secrets."""
    detail: dict[str, JSONValue] = {"transport": spec.transport}
    if isinstance(spec, StdioServerSpec):
        detail["command"] = spec.command
        detail["args"] = list(spec.args)
        if spec.env:
            detail["env_keys"] = sorted(spec.env)
    else:
        detail["url"] = redact_url(spec.url)
        if spec.headers:
            detail["header_keys"] = sorted(spec.headers)
    return detail


def redact_url(url: str) -> str:
    """`url` without a password in its user part (`https://user:pw@host` → `https://user:***@host`)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _walk(value: Any, secret: Callable[[SecretStr], JSONValue]) -> Any:
    return _walk_with_path(value, lambda _path, item: secret(item), ())


def _walk_with_path(
    value: Any, secret: Callable[[tuple[str | int, ...], SecretStr], JSONValue], path: tuple[str | int, ...]
) -> Any:
    if isinstance(value, SecretStr):
        return secret(path, value)
    if isinstance(value, Mapping):
        return {key: _walk_with_path(item, secret, (*path, key)) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_walk_with_path(item, secret, (*path, index)) for index, item in enumerate(value)]
    return value
