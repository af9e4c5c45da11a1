"""Our JSON codec writes what the SDK's own serialisation writes."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from mcpstation.connection._wire import decode, encode_message

MESSAGES: list[types.JSONRPCMessage] = [
    types.JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/call", params={"name": "echo", "arguments": {"m": "é\n"}}),
    types.JSONRPCRequest(jsonrpc="2.0", id="s-1", method="ping"),
    types.JSONRPCRequest(jsonrpc="2.0", id=1, method="x", params=None),  # an explicit None is sent as null
    types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"),
    types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 3}),
    types.JSONRPCResponse(jsonrpc="2.0", id=4, result={"big": 2**70, "f": 1.5, "nested": [{"a": None}]}),
    types.JSONRPCError(jsonrpc="2.0", id=5, error=types.ErrorData(code=-32601, message="Method not found")),
    types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=-1, message="m", data={"why": [1]})),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_encoding_matches_the_sdk(message: types.JSONRPCMessage) -> None:
    ours = encode_message(message)
    sdk = message.model_dump_json(by_alias=True, exclude_unset=True)
    assert json.loads(ours) == json.loads(sdk)
    assert b"\n" not in ours  # one line per message


def test_values_msgspec_cannot_encode_fall_back_to_pydantic() -> None:
    message = types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"when": {1, 2}})
    assert json.loads(encode_message(message)) == json.loads(message.model_dump_json(by_alias=True, exclude_unset=True))


def test_decoding_keeps_big_integers_exact_and_refuses_what_json_forbids() -> None:
    assert decode(b'{"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}
    for bad in (b'{"a": NaN}', b"\xff\xfe{}", b'{"a":"\\ud800"}', b'{"a":1} trailing'):
        with pytest.raises(ValueError):
            decode(bad)
