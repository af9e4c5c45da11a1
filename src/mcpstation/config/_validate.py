"""The one seam where pydantic's `ValidationError` becomes `ConfigError`, in the user's terms.

Pydantic's locations name the native shape and the union's tags (`servers.0.stdio.comand`);
they are rewritten to the user's file (`servers.github.comand`, `mcp.servers[1].url`) and
given a line. Input values are never echoed: they may be secrets.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from mcpstation.config._converted import Converted
from mcpstation.config._lines import LineMap, line_of
from mcpstation.config._problem import Loc, render_path, unknown_key
from mcpstation.config.models import (
    SseServerSpec,
    StationConfig,
    StdioServerSpec,
    StreamableHttpServerSpec,
    WebSocketServerSpec,
)
from mcpstation.errors import ConfigError

MAX_REPORTED = 5  # errors listed in one message; the rest are counted
_TAGS: dict[str, type[BaseModel]] = {
    "stdio": StdioServerSpec,
    "streamable_http": StreamableHttpServerSpec,
    "sse": SseServerSpec,
    "websocket": WebSocketServerSpec,
}


def validate(converted: Converted, lines: LineMap, *, source: str | None, label: str) -> StationConfig:
    """Build the `StationConfig`.

    Raises:
        ConfigError: naming file, line, field path and what was expected for each error.
    """
    try:
        return StationConfig.model_validate({**converted.data, "source": source})
    except ValidationError as exc:
        # Unknown keys first: a misspelt key also makes the real one "missing".
        errors = sorted(exc.errors(include_url=False), key=lambda error: error["type"] != "extra_forbidden")
        # `from None`: the chained ValidationError would print input values, and some are secrets.
        raise _config_error(errors, converted, lines, label) from None


def _config_error(errors: list[ErrorDetails], converted: Converted, lines: LineMap, label: str) -> ConfigError:
    reported = [_describe(error, converted, lines) for error in errors[:MAX_REPORTED]]
    (first_where, first_line, first_message), rest = reported[0], reported[1:]
    more = [
        f"{label}{'' if line is None else f':{line}'}: {render_path(where)}: {message}" for where, line, message in rest
    ]
    if len(errors) > MAX_REPORTED:
        more.append(f"... and {len(errors) - MAX_REPORTED} more error(s).")
    message = "\n".join([first_message, *more])
    return ConfigError(message, path=label, line=first_line, key=render_path(first_where) or None)


def _describe(error: ErrorDetails, converted: Converted, lines: LineMap) -> tuple[Loc, int | None, str]:
    raw_loc: Loc = tuple(error["loc"])
    native = _strip_tags(raw_loc)
    kind = error["type"]
    if kind == "invalid_transport":
        native = (*native, "transport")
    where = converted.user_path(native)
    if kind == "extra_forbidden":
        model = _model_at(raw_loc[:-1])
        fields = model.model_fields if model is not None else {}
        message = unknown_key(str(raw_loc[-1]), fields) + _other_transports(raw_loc)
    elif kind == "missing":
        message = "required key is missing."
    else:
        message = _expected(error)
    return where, line_of(lines, where), message


def _expected(error: ErrorDetails) -> str:
    message = error["msg"].removeprefix("Value error, ")
    text = message[0].upper() + message[1:] if message else "invalid value"
    value = error.get("input")
    if error["type"].endswith("_type") or error["type"].endswith("_parsing"):
        text += f" (got {type(value).__name__})"  # the type only, never the value
    return text if text.endswith(".") else f"{text}."


def _other_transports(loc: Loc) -> str:
    """A hint when an unknown server key belongs to another transport (`url` on a stdio server)."""
    if len(loc) != 4 or loc[0] != "servers" or loc[2] not in _TAGS:
        return ""
    owners = [tag for tag, model in _TAGS.items() if tag != loc[2] and str(loc[3]) in model.model_fields]
    if not owners:
        return ""
    return f" It belongs to transport {' or '.join(map(repr, owners))}, but this server is {loc[2]!r}."


def _strip_tags(loc: Loc) -> Loc:
    """Drop the union tag pydantic puts after a server's index."""
    if len(loc) > 2 and loc[0] == "servers" and isinstance(loc[1], int) and loc[2] in _TAGS:
        return (*loc[:2], *loc[3:])
    return loc


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The model whose fields are valid at `loc` (a pydantic location, tags included)."""
    current: Any = StationConfig
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return None
            current = field.annotation
        elif isinstance(part, int) and typing.get_origin(current) is tuple:
            current = typing.get_args(current)[0]
        elif isinstance(part, str) and part in _TAGS:
            current = _TAGS[part]
        else:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None
