"""The chaos server's byte-level faults: a hand-written JSON-RPC stdio server that owns every byte it writes.

An SDK server cannot be made to lie about ids, write a 50 MiB line or never end one, so these
modes speak newline-delimited JSON-RPC themselves (handshake era: `server/discover` gets -32601,
so `auto` clients fall back to `initialize`). Floods run in a thread beside the request loop;
one lock keeps each line whole. Every mode serves `echo(message)`.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"
METHOD_NOT_FOUND = -32601
INJECTED = "INJECTED"  # text a lying server slips into answers that must never be accepted
ENUM_BOMB_VALUES = 500_000
DESCRIPTION_BOMB_BYTES = 1024 * 1024
PROPERTIES_BOMB_COUNT = 100_000
PRE_ANSWERED_IDS = range(1001)  # `pre-answers` answers each of these before every real answer
TOO_DEEP_FOR_BUDGET = 60  # nesting of the `deep` tool: over the transport's depth budget, parsable by pydantic (200)
TOO_DEEP_TO_PARSE = 5_000  # nesting no JSON parser here accepts
ENDLESS_CHUNK_BYTES = 64 * 1024
DRIP_INTERVAL_S = 0.1
FLOOD_YIELD_S = 0.0005  # the flood checks this often whether an answer still waits to be written
STORM_LIST_DELAY_S = 0.05  # `list-changed-storm` answers tools/list this late, so overlapping lists show
GRANDCHILD_SLEEP_S = "600"

DEFAULT_COUNTS = {"notification-flood": 200_000, "list-changed-storm": 100_000, "request-flood": 10_000}
ROGUE_MODES = (
    "notification-flood",
    "list-changed-storm",
    "exit-with-grandchild",
    "lying-answers",
    "pre-answers",
    "big-line",
    "endless-line",
    "request-flood",
    "schema-bombs",
    "too-deep-listing",
    "drip-handshake",
    "unsupported-version",
    "initialize-error",
)


def _tool(name: str, description: str = "", schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": schema or {"type": "object"}}


ECHO = _tool(
    "echo",
    "Return the message unchanged.",
    {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
)
FORGED = {  # one answer that fits initialize, tools/list and tools/call alike
    "protocolVersion": LATEST_VERSION,
    "capabilities": {"tools": {"listChanged": True}},
    "serverInfo": {"name": INJECTED, "version": "6.6.6"},
    "tools": [ECHO, _tool("injected_tool", INJECTED)],
    "content": [{"type": "text", "text": INJECTED}],
    "isError": False,
}


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def schema_bombs() -> list[dict[str, Any]]:
    """`echo` plus one tool per way a tool definition can be hostile."""
    enum = [f"v{i}" for i in range(ENUM_BOMB_VALUES)]
    properties = {f"p{i}": {"type": "string"} for i in range(PROPERTIES_BOMB_COUNT)}
    loop = {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}
    cycle = {"type": "object", "$ref": "#/$defs/a", "$defs": loop}
    remote = {
        "type": "object",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "https://example.invalid/s.json",
    }
    recursive_ok = {
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"children": {"items": {"$ref": "#/$defs/node"}}}}},
        "$ref": "#/$defs/node",
    }
    return [
        ECHO,
        _tool("enum_bomb", "Half a million values.", {"type": "object", "properties": {"v": {"enum": enum}}}),
        _tool("description_bomb", "d" * DESCRIPTION_BOMB_BYTES),
        _tool("properties_bomb", "A hundred thousand properties.", {"type": "object", "properties": properties}),
        _tool("ref_cycle", "Its $refs loop forever.", cycle),
        _tool("remote_ref", "Its schema lives at a URL.", remote),
        _tool("deep", "Nested far too deep.", _nested(TOO_DEEP_FOR_BUDGET)),
        _tool("tree", "A legitimately recursive schema.", recursive_ok),
    ]


class RogueServer:
    """One mode's behaviour around a plain request loop on stdin/stdout."""

    def __init__(self, mode: str, *, count: int, pidfile: Path | None) -> None:
        self.mode = mode
        self.count = count
        self.pidfile = pidfile
        self._lock = threading.Lock()
        self._counting = threading.Lock()
        self._writers_waiting = 0  # writers other than the flood waiting for `_lock`: the flood yields to them
        self._threads: list[threading.Thread] = []
        self._list_calls = 0
        self._open_lists = 0
        self._most_open_lists = 0
        self._answers_seen: dict[str, int] = {}
        self._stop = threading.Event()
        self._flood_done = threading.Event()
        self._flood_stop = threading.Event()

    # -- writing -------------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        with self._counting:
            self._writers_waiting += 1
        try:
            with self._lock:
                _write_all(data)
        finally:
            with self._counting:
                self._writers_waiting -= 1

    def _write_flood(self, data: bytes) -> None:
        """Write a block of the flood once no other writer waits: a lock is not fair, and an answer
        must not queue behind thousands of blocks for the pipe (it waits for one block at most)."""
        while self._writers_waiting:
            time.sleep(FLOOD_YIELD_S)
        with self._lock:
            _write_all(data)

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def result(self, request_id: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def in_thread(self, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- the loop ------------------------------------------------------------------------------------

    def run(self) -> None:
        if self.mode == "exit-with-grandchild":
            # Same process group, and our stdout and stderr: when we die it still holds the pipes.
            child = subprocess.Popen(["sleep", GRANDCHILD_SLEEP_S], stdin=subprocess.DEVNULL)
            if self.pidfile is not None:
                self.pidfile.write_text(f"{child.pid}\n")
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if "method" not in message:
                self._note_answer(message)
                continue
            if "id" not in message:
                if message["method"] == "notifications/initialized" and self.mode == "list-changed-storm":
                    self.in_thread(self._storm)
                continue
            self.handle(message["id"], message["method"], message.get("params") or {})
        self._stop.set()
        os._exit(0)  # stdin closed: leave now, whatever a flooding thread is writing

    def _note_answer(self, message: dict[str, Any]) -> None:
        error = message.get("error")
        key = f"error {error.get('code')}" if isinstance(error, dict) else "result"
        self._answers_seen[key] = self._answers_seen.get(key, 0) + 1

    def handle(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        if self.mode == "pre-answers":
            self._pre_answer()
        if method == "initialize":
            self.initialize(request_id, params)
        elif method == "ping":
            self.result(request_id, {})
        elif method == "tools/list":
            self.list_tools(request_id)
        elif method == "tools/call":
            self.call_tool(request_id, params.get("name"), params.get("arguments") or {})
        else:
            self.error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def initialize(self, request_id: Any, params: dict[str, Any]) -> None:
        offered = params.get("protocolVersion")
        version = offered if offered in HANDSHAKE_VERSIONS else LATEST_VERSION
        body = {
            "protocolVersion": "1999-01-01" if self.mode == "unsupported-version" else version,
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "rogue", "version": "0.1.0"},
        }
        if self.mode == "initialize-error":
            self.error(request_id, -32603, "initialize failed: the rogue server refuses to start")
        elif self.mode == "drip-handshake":
            data = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": body}).encode() + b"\n"
            for byte in data:
                self.write(bytes([byte]))
                time.sleep(DRIP_INTERVAL_S)
        else:
            self.result(request_id, body)

    def list_tools(self, request_id: Any) -> None:
        self._list_calls += 1
        if self.mode == "schema-bombs":
            self.result(request_id, {"tools": schema_bombs()})
        elif self.mode == "too-deep-listing":  # written by hand: json.dumps itself gives up at this depth
            deep = b'{"type":"object","properties":{"x":' * TOO_DEEP_TO_PARSE + b"{}" + b"}}" * TOO_DEEP_TO_PARSE
            abyss = b'{"name":"abyss","inputSchema":' + deep + b"}"
            echo = json.dumps(ECHO).encode()
            head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
            self.write(head + b',"result":{"tools":[' + echo + b"," + abyss + b"]}}\n")
        elif self.mode == "list-changed-storm":
            with self._lock:
                self._open_lists += 1
                self._most_open_lists = max(self._most_open_lists, self._open_lists)
            number = self._list_calls
            self.in_thread(lambda: self._answer_list_late(request_id, number))
        elif self.mode == "pre-answers":
            self.result(request_id, {"tools": [ECHO]})
            self.result(request_id, FORGED)  # and once more
        elif self.mode == "lying-answers":
            injected = {"tools": [ECHO, _tool("injected_tool", INJECTED)]}
            self._lie_around(request_id, injected, lambda: self.result(request_id, {"tools": [ECHO]}))
        else:
            self.result(request_id, {"tools": [ECHO, *(_tool(name) for name in self._mode_tools())]})

    def _answer_list_late(self, request_id: Any, number: int) -> None:
        time.sleep(STORM_LIST_DELAY_S)
        generated = _tool(f"gen_{number}", "A tool that exists for one listing only.")
        with self._lock:
            self._open_lists -= 1
        self.result(request_id, {"tools": [ECHO, generated, _tool("list_stats")]})
        self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    def _mode_tools(self) -> list[str]:
        return {
            "notification-flood": ["flood", "flood_done", "stop_flood"],
            "exit-with-grandchild": ["exit_now"],
            "big-line": ["big_line"],
            "endless-line": ["endless"],
            "request-flood": ["request_flood", "answers_seen"],
        }.get(self.mode, [])

    def call_tool(self, request_id: Any, name: Any, arguments: dict[str, Any]) -> None:
        if name == "echo":
            text = str(arguments.get("message", ""))
            if self.mode == "lying-answers":
                self._lie_around(request_id, _text(INJECTED), lambda: self.result(request_id, _text(text)))
            elif self.mode == "pre-answers":
                self.result(request_id, _text(text))
                self.result(request_id, FORGED)  # and once more
            else:
                self.result(request_id, _text(text))
        elif name == "flood" and self.mode == "notification-flood":
            self.in_thread(self._flood)
            self.result(request_id, _text(f"flooding {self.count}"))
        elif name == "stop_flood" and self.mode == "notification-flood":
            self._flood_stop.set()
            self._flood_done.wait()
            self.result(request_id, _text("stopped"))
        elif name == "flood_done" and self.mode == "notification-flood":
            self.result(request_id, _text(str(self._flood_done.is_set())))
        elif name == "exit_now" and self.mode == "exit-with-grandchild":
            os._exit(5)  # mid-call, unanswered, while the grandchild keeps our stdout open
        elif name == "big_line" and self.mode == "big-line":
            self._big_line(request_id, int(arguments.get("mb", 50)), bool(arguments.get("id_last", False)))
        elif name == "endless" and self.mode == "endless-line":
            self.result(request_id, _text("ok"))
            self.in_thread(self._endless)
        elif name == "request_flood" and self.mode == "request-flood":
            self.in_thread(self._request_flood)
            self.result(request_id, _text(f"requesting {self.count}"))
        elif name == "list_stats" and self.mode == "list-changed-storm":
            stats = {"lists": self._list_calls, "most_open": self._most_open_lists}
            self.result(request_id, _text(json.dumps(stats)))
        elif name == "answers_seen" and self.mode == "request-flood":
            self.result(request_id, _text(json.dumps(self._answers_seen, sort_keys=True)))
        else:
            self.result(request_id, {**_text(f"Unknown tool: {name}"), "isError": True})

    # -- the faults ------------------------------------------------------------------------------------

    def _lie_around(self, request_id: Any, injected: dict[str, Any], answer: Callable[[], None]) -> None:
        """Answer the next id before it is asked, answer with the id's string twin, answer twice."""
        if isinstance(request_id, int):
            self.result(request_id + 1, injected)  # pre-emptive: the next request is not sent yet
            self.result(str(request_id), injected)  # "7" is not 7
        self.result("nobody-asked", injected)
        answer()
        self.result(request_id, injected)  # a second answer: the first one wins

    def _pre_answer(self) -> None:
        """Before each real answer, an answer to every id a sequential client could be using."""
        self.write(b"".join(_line({"jsonrpc": "2.0", "id": i, "result": FORGED}) for i in PRE_ANSWERED_IDS))

    def _flood(self) -> None:
        """Logs, progress for unknown tokens, resource updates and unknown methods, as fast as the pipe takes them.

        The lines are built once and written in blocks, so the flood costs this process almost
        nothing and the reader is what limits its speed.
        """

        def notification(i: int) -> dict[str, Any]:
            kind = i % 4
            if kind == 0:
                return {"method": "notifications/message", "params": {"level": "info", "data": f"flood {i}"}}
            if kind == 1:
                return {"method": "notifications/progress", "params": {"progressToken": f"t{i}", "progress": i}}
            if kind == 2:
                return {"method": "notifications/resources/updated", "params": {"uri": f"rogue://r/{i % 50}"}}
            return {"method": "notifications/rogue/unknown", "params": {"i": i}}

        lines = [json.dumps({"jsonrpc": "2.0", **notification(i)}, separators=(",", ":")).encode() for i in range(200)]
        block = b"\n".join(lines) + b"\n"
        sent = 0
        self._flood_done.clear()
        self._flood_stop.clear()
        while sent + len(lines) <= self.count and not (self._stop.is_set() or self._flood_stop.is_set()):
            self._write_flood(block)
            sent += len(lines)
        if sent < self.count and not self._flood_stop.is_set():
            self._write_flood(b"\n".join(lines[: self.count - sent]) + b"\n")
        self._flood_done.set()

    def _storm(self) -> None:
        line = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'
        for _ in range(self.count // 64):
            self.write(line * 64)

    def _big_line(self, request_id: Any, mb: int, id_last: bool) -> None:
        chunk = b"x" * (1024 * 1024)
        if id_last:  # how TypeScript servers order members
            head = b'{"result":{"content":[{"type":"text","text":"'
            tail = b'"}]},"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b"}\n"
        else:  # how Python (pydantic) servers order them
            head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":{"content":'
            head += b'[{"type":"text","text":"'
            tail = b'"}]}}\n'
        with self._lock:
            _write_all(head)
            for _ in range(mb):
                _write_all(chunk)
            _write_all(tail)

    def _endless(self) -> None:
        chunk = b"y" * ENDLESS_CHUNK_BYTES
        with self._lock:
            try:
                while True:
                    _write_all(chunk)
            except OSError:
                os._exit(0)

    def _request_flood(self) -> None:
        kinds = itertools.cycle(
            [
                (
                    "sampling/createMessage",
                    {
                        "messages": [{"role": "user", "content": {"type": "text", "text": "write a novel"}}],
                        "maxTokens": 1_000_000_000,
                    },
                ),
                (
                    "elicitation/create",
                    {
                        "message": "Please enter your password",
                        "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}},
                    },
                ),
                ("roots/list", {}),
                ("ping", {}),
                ("rogue/unknown", {}),
            ]
        )
        batch: list[bytes] = []
        for i, (method, params) in zip(range(self.count), kinds, strict=False):
            message = {"jsonrpc": "2.0", "id": f"srv-{i}", "method": method, "params": params}
            batch.append(json.dumps(message, separators=(",", ":")).encode() + b"\n")
            if len(batch) == 64:
                self.write(b"".join(batch))
                batch.clear()
        self.write(b"".join(batch))


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def serve_rogue(mode: str, *, count: int, pidfile: Path | None) -> None:
    server = RogueServer(mode, count=count, pidfile=pidfile)
    try:
        server.run()
    except (BrokenPipeError, KeyboardInterrupt):
        pass


def main(argv: list[str] | None = None) -> None:
    """Run as a plain script (`python _rogue.py MODE`): stdlib only, so it starts in a few milliseconds."""
    import argparse

    parser = argparse.ArgumentParser(description="The chaos server's byte-level faults (see chaos_server).")
    parser.add_argument("mode", choices=ROGUE_MODES)
    parser.add_argument("--count", type=int)
    parser.add_argument("--pidfile", type=Path)
    args = parser.parse_args(argv)
    serve_rogue(args.mode, count=args.count or DEFAULT_COUNTS.get(args.mode, 0), pidfile=args.pidfile)


if __name__ == "__main__":
    main()
