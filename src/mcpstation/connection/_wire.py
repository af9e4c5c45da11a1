"""JSON-RPC messages to and from bytes, with msgspec: the fastest correct JSON codec we have.

msgspec rather than pydantic's own JSON for the hot path: it decodes and encodes several times
faster, keeps big integers exact (orjson turns them into floats), rejects invalid UTF-8, NaN
and lone surrogates like the standard demands, and its `Raw` type yields a member's bytes
without building Python objects for it, which is how a listing is measured before it is parsed.
The pydantic models the SDK session needs are still built, from the decoded dicts.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import msgspec

__all__ = ["JSONRPC_2_0", "decode", "decode_members", "encode_message"]

JSONRPC_2_0 = msgspec.Raw(b'"2.0"')

_ANY = msgspec.json.Decoder()
_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ENCODER = msgspec.json.Encoder()


def decode(data: bytes | msgspec.Raw) -> Any:
    """Any JSON value. Raises msgspec.DecodeError (or RecursionError when nested too deep)."""
    return _ANY.decode(data)


def decode_members(data: bytes | msgspec.Raw) -> dict[str, msgspec.Raw]:
    """A JSON object's members, each still as its raw bytes.

    Raises:
        msgspec.DecodeError: not JSON. msgspec.ValidationError: JSON, but not an object.
        RecursionError: nested deeper than the decoder's recursion limit.
    """
    return _MEMBERS.decode(data)


def encode_message(message: types.JSONRPCMessage) -> bytes:
    """The message as one line of JSON, without the newline.

    Equal to `message.model_dump_json(by_alias=True, exclude_unset=True)` (the SDK's own
    serialisation) for every message the SDK builds; anything msgspec cannot encode natively
    falls back to exactly that.
    """
    kind = type(message)
    fields = message.model_fields_set
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind is types.JSONRPCRequest:
        body["id"] = message.id  # type: ignore[union-attr]
        body["method"] = message.method  # type: ignore[union-attr]
        if "params" in fields:
            body["params"] = message.params  # type: ignore[union-attr]
    elif kind is types.JSONRPCNotification:
        body["method"] = message.method  # type: ignore[union-attr]
        if "params" in fields:
            body["params"] = message.params  # type: ignore[union-attr]
    elif kind is types.JSONRPCResponse:
        body["id"] = message.id  # type: ignore[union-attr]
        body["result"] = message.result  # type: ignore[union-attr]
    elif kind is types.JSONRPCError:
        body["id"] = message.id  # type: ignore[union-attr]
        error: types.ErrorData = message.error  # type: ignore[union-attr]
        body["error"] = error.model_dump(mode="json", exclude_unset=True)
    else:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode()
    try:
        return _ENCODER.encode(body)
    except (TypeError, ValueError, OverflowError):  # a non-JSON Python value somewhere in params or result
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode()
