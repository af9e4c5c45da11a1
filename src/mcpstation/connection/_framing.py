"""Newline framing with a hard bound, and what the edges of an unreadable message say about it.

`LineFramer` splits a byte stream into lines. A line longer than its cap is never held whole:
once the cap is crossed only its first `HEAD_BYTES` and a rolling window of its last
`TAIL_BYTES` are kept, the rest is counted and discarded. Those edges are enough to find the
message's `id` (Python SDK servers write `"id"` near the start, TypeScript SDK servers write it
last) without parsing the middle; `sniff_head` and `sniff_tail` read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec

HEAD_BYTES = 64 * 1024  # kept of an oversized line: its envelope keys and id when they come first
TAIL_BYTES = 4 * 1024  # kept of an oversized line's end: its id when it comes last

RequestId = int | str

__all__ = ["HEAD_BYTES", "TAIL_BYTES", "Edges", "LineFramer", "Oversized", "sniff_head", "sniff_tail"]


@dataclass(slots=True)
class Oversized:
    """A line over the cap: its first bytes, its size so far, and (once it ended) its last bytes."""

    head: bytes
    size: int
    tail: bytes = b""
    complete: bool = False


@dataclass(slots=True)
class _Discarding:
    head: bytes
    size: int
    tail: bytearray = field(default_factory=bytearray)

    def add(self, data: bytes | memoryview) -> None:
        self.size += len(data)
        self.tail += data[-TAIL_BYTES:]
        if len(self.tail) > TAIL_BYTES:
            del self.tail[: len(self.tail) - TAIL_BYTES]


class LineFramer:
    """Bytes in, complete lines (without the newline) and `Oversized` notices out.

    A line over `max_line_bytes` yields an `Oversized` with `complete=False` as soon as the cap
    is crossed, then one with `complete=True` when its newline finally arrives. Memory held is
    at most the cap plus one chunk, whatever the input.
    """

    def __init__(self, max_line_bytes: int) -> None:
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be positive, got {max_line_bytes}")
        self.max_line_bytes = max_line_bytes
        self._parts: list[bytes] = []
        self._size = 0
        self._discarding: _Discarding | None = None

    @property
    def discarding(self) -> Oversized | None:
        """The oversized line being skipped right now, if any."""
        d = self._discarding
        return None if d is None else Oversized(d.head, d.size, bytes(d.tail))

    @property
    def buffered_bytes(self) -> int:
        return self._size

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        if self._discarding is None and self._size + len(chunk) <= self.max_line_bytes:
            # The common case: no line in this chunk can reach the cap, so split it in C.
            lines: list[bytes | Oversized] = chunk.split(b"\n")  # type: ignore[assignment]
            rest = lines.pop()
            assert isinstance(rest, bytes)
            if self._parts and lines:
                self._parts.append(lines[0])  # type: ignore[arg-type]
                lines[0] = b"".join(self._parts)
                self._parts.clear()
                self._size = 0
            if rest:
                self._parts.append(rest)
                self._size += len(rest)
            return lines
        return self._feed_slowly(chunk)

    def _feed_slowly(self, chunk: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        start, end = 0, len(chunk)
        cap = self.max_line_bytes
        while start < end:
            newline = chunk.find(b"\n", start)
            stop = end if newline < 0 else newline
            if self._discarding is not None:
                self._discarding.add(memoryview(chunk)[start:stop])
                if newline < 0:
                    break
                self._finish_discarding(out)
                start = newline + 1
                continue
            piece = chunk[start:stop] if (start or stop != end) else chunk
            if self._size + len(piece) > cap:
                self._start_discarding(piece, out)
                if newline < 0:
                    break
                self._finish_discarding(out)
                start = newline + 1
                continue
            if newline < 0:
                self._parts.append(piece)
                self._size += len(piece)
                break
            if self._parts:
                self._parts.append(piece)
                piece = b"".join(self._parts)
                self._parts.clear()
                self._size = 0
            out.append(piece)
            start = newline + 1
        return out

    def _start_discarding(self, piece: bytes, out: list[bytes | Oversized]) -> None:
        parts = [*self._parts, piece]
        discarding = _Discarding(head=_head_of(parts), size=0)
        for part in parts:
            discarding.add(part)
        self._parts.clear()
        self._size = 0
        self._discarding = discarding
        out.append(Oversized(discarding.head, discarding.size, bytes(discarding.tail)))

    def _finish_discarding(self, out: list[bytes | Oversized]) -> None:
        done = self._discarding
        assert done is not None
        self._discarding = None
        out.append(Oversized(done.head, done.size, bytes(done.tail), complete=True))


def _head_of(parts: list[bytes]) -> bytes:
    taken: list[bytes] = []
    size = 0
    for part in parts:
        taken.append(part[: HEAD_BYTES - size])
        size += len(taken[-1])
        if size >= HEAD_BYTES:
            break
    return b"".join(taken)


# -- reading the edges of a message that cannot be parsed whole ------------------------------------

_TOKEN = re.compile(
    rb'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<open>[{\[])|(?P<close>[}\]])|(?P<colon>:)|(?P<comma>,)'
    rb"|(?P<scalar>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null))"
)
_TAIL_ID = re.compile(
    rb'(?<!\\)"id"\s*:\s*(?P<id>-?\d+|"(?:[^"\\]|\\.)*"|null)\s*'
    rb'(?:,\s*"[A-Za-z_]+"\s*:\s*(?:"(?:[^"\\]|\\.)*"|-?\d+|true|false|null)\s*)*\}\s*$'
)
_MISSING = object()
MAX_SNIFF_TOKENS = 20_000  # bound on the work spent reading one head


@dataclass(frozen=True, slots=True)
class Edges:
    """What the first bytes of a JSON-RPC message reveal: its top-level keys and, if seen, its id."""

    keys: frozenset[str]
    id: RequestId | None = None
    has_id: bool = False

    @property
    def is_request_or_notification(self) -> bool:
        return "method" in self.keys or "params" in self.keys

    @property
    def is_response(self) -> bool:
        return not self.is_request_or_notification and bool(self.keys & {"result", "error"})


def sniff_head(head: bytes) -> Edges:
    """The top-level keys and id found in the first bytes of a JSON object, however it continues."""
    keys: set[str] = set()
    found_id: object = _MISSING
    depth = 0
    key: str | None = None
    expect_key = False
    after_colon = False
    position = 0
    length = len(head)
    for _ in range(MAX_SNIFF_TOKENS):
        if position >= length:
            break
        match = _TOKEN.match(head, position)
        if match is None:
            break  # a truncated token or not JSON: what was read so far is all we know
        position = match.end()
        kind = match.lastgroup
        if depth == 1 and after_colon and kind in ("str", "scalar", "open"):
            after_colon = False
            if key is not None:
                keys.add(key)
                if key == "id" and kind != "open":
                    found_id = _decode_id(match.group(kind))
        elif depth == 1 and expect_key and kind == "str":
            key = _decode_key(match.group("str"))
            expect_key = False
        if kind == "open":
            depth += 1
            if depth == 1:
                if match.group("open") != b"{":
                    break
                expect_key = True
        elif kind == "close":
            depth -= 1
            if depth <= 0:
                break
        elif kind == "colon" and depth == 1:
            after_colon = True
        elif kind == "comma" and depth == 1:
            expect_key = True
        if found_id is not _MISSING and keys & {"result", "error", "method", "params"}:
            break  # id and kind both known
    if found_id is _MISSING:
        return Edges(frozenset(keys))
    return Edges(frozenset(keys), found_id if isinstance(found_id, int | str) else None, has_id=True)


def sniff_tail(tail: bytes) -> tuple[bool, RequestId | None]:
    """Whether the last bytes of a JSON object end with a top-level `"id"` member, and its value.

    Only scalar members may follow the id before the closing brace, so a match is at the top
    level of a well-formed object whatever the bytes before it held.
    """
    match = _TAIL_ID.search(tail)
    if match is None:
        return False, None
    value = _decode_id(match.group("id"))
    return True, value if isinstance(value, int | str) else None


def _decode_id(token: bytes) -> object:
    try:
        value = msgspec.json.decode(token)
    except msgspec.DecodeError:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value


def _decode_key(token: bytes) -> str | None:
    try:
        value = msgspec.json.decode(token)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, str) else None
