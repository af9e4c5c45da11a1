"""Bounded newline framing, and reading the id off the edges of a message too large to parse."""

from __future__ import annotations

import json

import pytest

from mcpstation.connection._framing import HEAD_BYTES, TAIL_BYTES, LineFramer, Oversized, sniff_head, sniff_tail


def _feed_all(framer: LineFramer, chunks: list[bytes]) -> list[bytes | Oversized]:
    out: list[bytes | Oversized] = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    return out


def test_lines_split_across_chunks_come_out_whole_and_in_order() -> None:
    data = b'{"a":1}\n{"b":"x\\ny"}\n\n{"c":3}\n'
    for size in (1, 2, 3, 7, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert _feed_all(LineFramer(1024), chunks) == [b'{"a":1}', b'{"b":"x\\ny"}', b"", b'{"c":3}']


def test_a_partial_line_waits_for_its_newline() -> None:
    framer = LineFramer(1024)
    assert framer.feed(b'{"a":') == []
    assert framer.buffered_bytes == 5
    assert framer.feed(b"1}\n") == [b'{"a":1}']
    assert framer.buffered_bytes == 0


def test_a_line_over_the_cap_is_announced_when_it_crosses_and_when_it_ends() -> None:
    framer = LineFramer(100)
    head = b'{"jsonrpc":"2.0","id":7,"result":{"text":"'
    out = framer.feed(head + b"x" * 80)
    assert len(out) == 1 and isinstance(out[0], Oversized) and not out[0].complete
    assert out[0].head.startswith(head) and out[0].size == len(head) + 80
    assert framer.feed(b"x" * 1000) == []
    assert framer.buffered_bytes == 0  # nothing of it is held but its edges
    out = framer.feed(b'"}}\n{"next":1}\n')
    assert isinstance(out[0], Oversized) and out[0].complete
    assert out[0].size == len(head) + 80 + 1000 + 3
    assert out[0].tail.endswith(b'"}}')
    assert out[1] == b'{"next":1}'


def test_an_oversized_line_inside_one_chunk_gives_both_notices() -> None:
    out = LineFramer(10).feed(b"short\n" + b"y" * 50 + b"\nafter\n")
    assert out[0] == b"short"
    assert isinstance(out[1], Oversized) and not out[1].complete and out[1].size == 50
    assert isinstance(out[2], Oversized) and out[2].complete and out[2].size == 50
    assert out[3] == b"after"


def test_an_endless_line_keeps_only_its_edges() -> None:
    framer = LineFramer(1024)
    chunk = b"z" * 65536
    for _ in range(200):  # 12.5 MiB without a newline
        assert all(isinstance(item, Oversized) for item in framer.feed(chunk))
    discarding = framer.discarding
    assert discarding is not None and discarding.size == 200 * 65536
    assert len(discarding.head) <= HEAD_BYTES and len(discarding.tail) <= TAIL_BYTES
    assert framer.buffered_bytes == 0


def test_a_cap_below_one_byte_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        LineFramer(0)


@pytest.mark.parametrize("request_id", [7, "abc-1", -3])
def test_the_head_of_a_python_ordered_response_names_its_id(request_id: int | str) -> None:
    head = f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{{"content":[{{"text":"'.encode() + b"x" * 500
    edges = sniff_head(head)
    assert edges.has_id and edges.id == request_id
    assert edges.is_response and not edges.is_request_or_notification


def test_an_id_nested_in_the_result_is_not_the_message_id() -> None:
    edges = sniff_head(b'{"result":{"id":99,"items":[{"id":5}],"text":"' + b"x" * 100)
    assert not edges.has_id and edges.is_response


def test_the_head_of_a_request_says_it_is_one() -> None:
    edges = sniff_head(b'{"jsonrpc":"2.0","id":"s-1","method":"sampling/createMessage","params":{"messages":[')
    assert edges.id == "s-1" and edges.is_request_or_notification


def test_the_tail_of_a_typescript_ordered_response_names_its_id() -> None:
    assert sniff_tail(b'xxxx"}]},"jsonrpc":"2.0","id":42}') == (True, 42)
    assert sniff_tail(b'xxxx"}]},"id":"q-9","jsonrpc":"2.0"}  ') == (True, "q-9")


def test_a_tail_whose_id_is_nested_is_not_read_as_the_message_id() -> None:
    assert sniff_tail(b'"text":"x"},"meta":{"id":5}}') == (False, None)
    assert sniff_tail(b"yyyyyyyy") == (False, None)


def test_garbage_heads_reveal_nothing() -> None:
    assert not sniff_head(b"Starting server...").has_id
    assert not sniff_head(b"[1,2,3]").has_id
    assert sniff_head(b'{"id":true,"result":{}}').id is None  # a bool is no request id
