"""The argument check: a tool call whose arguments do not match the tool's input schema is refused
before it reaches the server.

The station holds every tool's schema, so it can tell the LLM what to fix in words it can act on
(the unknown keys, the missing ones, each expected type), where a server would answer with its
own validator's raw error, or act on a half-understood call. The refusal is a result
(`Outcome.REFUSED`), never an exception.

The schema judged is the one the server listed, never a provider's compiled form. One validator is
compiled per tool definition (a new listing brings new definitions) with `jsonschema-rs`, which
checks a call in about a microsecond (the pure-Python `jsonschema` takes 30-300 µs, more than the
rest of the station's path), and never fetches a remote `$ref`. A schema it cannot use (invalid,
an unknown `$schema` dialect, a `$ref` it cannot resolve offline) never blocks a call: that
tool's calls go to the server unchecked, with one warning per definition. Values that are not
JSON (a library caller's `datetime`) are left to the SDK and the server too.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcpstation.catalog import AnyResult, Catalog, CatalogTool
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.kinds import KINDS
from mcpstation.pipeline.request import Handler, Request, answered

if TYPE_CHECKING:
    import jsonschema_rs  # loaded at the first call to check, not with the station

logger = logging.getLogger(__name__)

ERRORS_SHOWN = 5  # schema errors quoted in a refusal beyond the unknown and missing keys; the rest are counted


class ArgumentCheck:
    """Refuses a call whose arguments its tool's input schema rejects (the kinds whose row says
    `checks_arguments`); validators compiled once per definition, at its first call."""

    def __init__(self, catalog: Callable[[], Catalog]) -> None:
        self._catalog = catalog
        # (server, tool) -> (the schema compiled, its validator or None when it cannot be used)
        self._compiled: dict[tuple[str, str], tuple[Mapping[str, Any], jsonschema_rs.Validator | None]] = {}

    def __call__(self, handler: Handler) -> Handler:
        def checked(request: Request) -> Awaitable[AnyResult]:
            if not KINDS[request.kind].checks_arguments:
                return handler(request)
            entry = self._catalog().tools.get(request.name)
            if entry is None or entry.server != request.server or entry.tool != request.target:
                return handler(request)  # the catalog moved on since resolution; the server judges
            validator = self.validator(entry)
            arguments = request.arguments if isinstance(request.arguments, dict) else dict(request.arguments)
            try:
                if validator is None or validator.is_valid(_nulls_as_absent(arguments, entry.input_schema)):
                    return handler(request)
            except ValueError:  # not JSON values (a library caller's own objects): the SDK and server judge
                return handler(request)
            message, details = refusal(entry, arguments, validator)
            structured = {"success": False, "error": message, **details}
            return answered(request.fail(Outcome.REFUSED, message, structured=structured))

        return checked

    def validator(self, entry: CatalogTool) -> jsonschema_rs.Validator | None:
        """The validator of `entry`'s current definition, compiled at its first call; None when its
        schema cannot be used (warned once)."""
        key = (entry.server, entry.tool)
        compiled = self._compiled.get(key)
        if compiled is None or compiled[0] is not entry.input_schema:
            compiled = self._compiled[key] = (entry.input_schema, _compile(entry))
        return compiled[1]


def _nulls_as_absent(arguments: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments judged: a top-level null for a key the schema does not require counts as the
    key left out. Models send it for "not given" (a strict provider schema makes every optional
    key required and nullable), and servers read it that way; the call still carries the null."""
    for value in arguments.values():  # a plain loop: this runs on every call, and most have no null
        if value is None:
            break
    else:
        return arguments
    required = schema.get("required", ())
    required_keys = set(required) if isinstance(required, list) else set()
    return {key: value for key, value in arguments.items() if value is not None or key in required_keys}


def _compile(entry: CatalogTool) -> jsonschema_rs.Validator | None:
    import jsonschema_rs

    try:
        return jsonschema_rs.validator_for(dict(entry.input_schema), offline=True)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
        reason = str(exc).split("\n", 1)[0]
        logger.warning(
            "tool %r of server %r: its input schema cannot be checked (%s); its calls go to the server unchecked",
            entry.tool, entry.server, reason,
        )  # fmt: skip
        return None


def refusal(
    entry: CatalogTool, arguments: Mapping[str, Any], validator: jsonschema_rs.Validator
) -> tuple[str, dict[str, Any]]:
    """What the LLM reads: each fault of the call, then the arguments the tool expects; and the same
    as data (`unknown`, `missing`, `expected`)."""
    schema = entry.input_schema
    properties = schema.get("properties")
    declared: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
    required = [key for key in schema.get("required", ()) if isinstance(key, str)]
    unknown = [key for key in arguments if declared and key not in declared]
    missing = [key for key in required if key not in arguments]
    lines = []
    for key in unknown:
        near = difflib.get_close_matches(key, [name for name in declared if name not in arguments], n=1)
        lines.append(f"- unknown argument {key!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    lines.extend(f"- missing required argument {key!r} ({_expected(declared.get(key))})" for key in missing)
    others = [error for error in validator.iter_errors(arguments) if not _said_already(error, unknown, missing)]
    for error in others[:ERRORS_SHOWN]:
        at = ".".join(str(part) for part in error.instance_path)
        lines.append(f"- {at!r}: {error.message}" if at else f"- {error.message}")
    if len(others) > ERRORS_SHOWN:
        lines.append(f"- and {len(others) - ERRORS_SHOWN} more")
    expected = {key: _expected(value) for key, value in declared.items()}
    signature = "; ".join(
        f"{key}: {kind}" + (" (required)" if key in required else "") for key, kind in expected.items()
    )
    message = (
        f"the arguments do not match the input schema of tool {entry.name!r}; nothing was sent to the server. "
        "Fix the call and try again:\n" + "\n".join(lines) + (f"\nExpected arguments: {signature}" if signature else "")
    )
    return message, {"unknown": unknown, "missing": missing, "expected": expected}


def _said_already(error: jsonschema_rs.ValidationError, unknown: list[str], missing: list[str]) -> bool:
    """A root-level missing or unexpected key is already named in its own line."""
    import jsonschema_rs

    if error.instance_path:
        return False
    kind = error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
        return kind.property in missing
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
        return all(key in unknown for key in kind.unexpected)
    return False


def _expected(schema: Any) -> str:
    """A property's expected type in a few words: `string`, `integer or null`, `one of ['a', 'b']`."""
    if not isinstance(schema, Mapping):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return f"one of {schema['enum']!r}"
    if "const" in schema:
        return f"exactly {schema['const']!r}"
    kind = schema.get("type")
    if isinstance(kind, str):
        item = schema.get("items")
        return f"array of {_expected(item)}" if kind == "array" and isinstance(item, Mapping) else kind
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            return " or ".join(_expected(option) for option in schema[union])
    return "any"
