"""What a key of another client's server entry means to us: one small rule per meaning.

A rule gets the entry being built, the key and its value, and puts native fields (`command`,
`call_timeout_s`, `enabled`, ...) into the entry, remembering the user's key for messages. A
client's table (`_clients.py`) maps each key it knows to a rule; `unused` marks keys the client
gives a meaning mcpstation has no use for (auto-approval, icons, ...).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mcpstation.config._problem import Loc, Problem, render_path
from mcpstation.config._values import Values

logger = logging.getLogger(__name__)

# Every transport name a client writes → ours.
TRANSPORT_NAMES: dict[str, str] = {
    "stdio": "stdio",
    "local": "stdio",
    "sse": "sse",
    "http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamableHttp": "streamable_http",
    "streamable_http": "streamable_http",
    "streamablehttp": "streamable_http",
    "ws": "websocket",
    "websocket": "websocket",
}
_MERGED = ("env", "headers")  # fields several keys may fill (Codex's http_headers and env_http_headers)


class Entry:
    """One server being read: its native fields and the user's place each came from."""

    def __init__(self, where: Loc, values: Values, workspace: str) -> None:
        self.where = where
        self.values = values
        self.workspace = workspace
        self.fields: dict[str, Any] = {}
        self.origins: dict[str, Loc] = {}
        self.implied_transport: str | None = None
        self.skipped: str | None = None

    def at(self, key: str | Loc) -> Loc:
        return (*self.where, key) if isinstance(key, str) else key

    def put(self, field: str, value: Any, key: str | Loc) -> None:
        place = self.at(key)
        if field in self.fields:
            if field in _MERGED and isinstance(value, Mapping) and isinstance(self.fields[field], dict):
                self.fields[field].update(value)
                return
            first = render_path(self.origins[field])
            raise Problem(place, f"sets {field!r} a second time (first at {first}).")
        self.fields[field] = dict(value) if field in _MERGED and isinstance(value, Mapping) else value
        self.origins[field] = place


Rule = Callable[[Entry, str, Any], None]


def to(field: str) -> Rule:
    """The value, expanded, is the native `field`."""

    def rule(entry: Entry, key: str, value: Any) -> None:
        entry.put(field, entry.values.deep(value, entry.at(key)), key)

    return rule


def path(field: str) -> Rule:
    """A directory, relative ones taken from the workspace (the project directory)."""

    def rule(entry: Entry, key: str, value: Any) -> None:
        expanded = entry.values.deep(value, entry.at(key))
        if isinstance(expanded, str) and expanded and not Path(expanded).expanduser().is_absolute():
            expanded = str(Path(entry.workspace) / expanded)
        entry.put(field, expanded, key)

    return rule


def url(implies: str | None = None) -> Rule:
    """A URL; `implies` is the transport the key itself means (Gemini's `httpUrl`)."""

    def rule(entry: Entry, key: str, value: Any) -> None:
        entry.put("url", entry.values.deep(value, entry.at(key)), key)
        if implies is not None:
            entry.implied_transport = implies

    return rule


def transport(entry: Entry, key: str, value: Any) -> None:
    """`type` / `transport`: the client's transport name, mapped to ours."""
    entry.put("transport", TRANSPORT_NAMES.get(value, value) if isinstance(value, str) else value, key)


def number(field: str, *, per: float = 1.0, unit: str = "seconds", ignore_below: float | None = None) -> Rule:
    """A duration; `per` divides it into seconds (1000 for milliseconds)."""

    def rule(entry: Entry, key: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Problem(entry.at(key), f"expected a number of {unit}.")
        if ignore_below is not None and value < ignore_below:
            logger.debug(
                "%s: under %g %s, which the client ignores; ignored", render_path(entry.at(key)), ignore_below, unit
            )
            return
        entry.put(field, value / per, key)

    return rule


def flag(field: str, *, invert: bool = False) -> Rule:
    """A true/false switch (`disabled` is `enabled` inverted)."""

    def rule(entry: Entry, key: str, value: Any) -> None:
        if not isinstance(value, bool):
            raise Problem(entry.at(key), "expected true or false.")
        entry.put(field, not value if invert else value, key)

    return rule


def tools(field: str) -> Rule:
    """A list of tool names (include or exclude); ours are glob patterns, so glob characters are escaped."""

    def rule(entry: Entry, key: str, value: Any) -> None:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise Problem(entry.at(key), "expected a list of tool names.")
        entry.put(field, [_literal_glob(name) for name in value], key)

    return rule


def env_names(*, optional: bool) -> Rule:
    """Names of environment variables to hand the server (Codex's `env_vars`, goose's `env_keys`)."""

    def rule(entry: Entry, key: str, value: Any) -> None:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise Problem(entry.at(key), "expected a list of environment variable names.")
        env: dict[str, str] = {}
        for index, name in enumerate(value):
            found = entry.values.env_ref(name, (*entry.at(key), index), optional=optional)
            if found is not None:
                env[name] = found
        entry.put("env", env, key)

    return rule


def headers_from_env(entry: Entry, key: str, value: Any) -> None:
    """Codex's `env_http_headers`: header → the environment variable holding its value."""
    if not isinstance(value, Mapping):
        raise Problem(entry.at(key), "expected a table of header = environment variable name.")
    headers: dict[str, str] = {}
    for header, name in value.items():
        found = entry.values.env_ref(str(name), (*entry.at(key), header), optional=True)
        if found is not None:
            headers[str(header)] = found
    entry.put("headers", headers, key)


def bearer_from_env(entry: Entry, key: str, value: Any) -> None:
    """Codex's `bearer_token_env_var`: the environment variable holding the bearer token."""
    if not isinstance(value, str) or not value:
        raise Problem(entry.at(key), "expected the name of an environment variable.")
    entry.put("bearer_token", entry.values.env_ref(value, entry.at(key), optional=False), key)


def env_file(entry: Entry, key: str, value: Any) -> None:
    """VS Code's and Cursor's `envFile`: its variables join `env`; the entry's own `env` wins."""
    if not isinstance(value, str):
        raise Problem(entry.at(key), "expected the path of an env file.")
    from_file = entry.values.env_file(value, entry.at(key))
    own = entry.fields.get("env")
    entry.fields["env"] = {**from_file, **(own if isinstance(own, dict) else {})}
    entry.origins.setdefault("env", entry.at(key))


def headers_in(sub_key: str) -> Rule:
    """A table holding `headers` (Continue's `requestOptions`); its other keys are unused."""

    def rule(entry: Entry, key: str, value: Any) -> None:
        if not isinstance(value, Mapping):
            raise Problem(entry.at(key), "expected a table.")
        for inner, item in value.items():
            if inner == sub_key:
                entry.put("headers", entry.values.deep(item, (*entry.at(key), inner)), (*entry.at(key), inner))
            else:
                logger.debug("%s: not used by mcpstation; ignored", render_path((*entry.at(key), inner)))

    return rule


def zed_command(entry: Entry, key: str, value: Any) -> None:
    """Zed's `command`: a string, or (older settings) a table of `path`, `args` and `env`."""
    if not isinstance(value, Mapping):
        to("command")(entry, key, value)
        return
    place = entry.at(key)
    for inner, item in value.items():
        field = {"path": "command", "args": "args", "env": "env"}.get(inner)
        if field is None:
            logger.debug("%s: not used by mcpstation; ignored", render_path((*place, inner)))
            continue
        entry.put(field, entry.values.deep(item, (*place, inner)), (*place, inner))


def skip_unless(runnable: Mapping[str, str], why: str) -> Rule:
    """A kind key (`type`, `source`): kinds in `runnable` map to our transport; others are skipped."""

    def rule(entry: Entry, key: str, value: Any) -> None:
        if isinstance(value, str) and value in runnable:
            if runnable[value]:
                entry.put("transport", runnable[value], key)
            return
        entry.skipped = why.format(value=value)

    return rule


def title(entry: Entry, key: str, value: Any) -> None:
    """A display name: our `title`."""
    if isinstance(value, str) and value:
        entry.put("title", value, key)


def unused(entry: Entry, key: str, value: Any) -> None:
    """A key the client uses that means nothing to mcpstation (auto-approval, icons, ...)."""
    logger.debug("%s: used by the client only; ignored", render_path(entry.at(key)))


def _literal_glob(name: str) -> str:
    return "".join(f"[{char}]" if char in "*?[" else char for char in name)
