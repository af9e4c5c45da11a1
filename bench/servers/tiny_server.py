"""A stdlib-only MCP server over stdio that answers in microseconds, so a benchmark measures the client.

    python bench/servers/tiny_server.py [--tools N] [--page-size K] [--init-delay S] [--init-cpu S]

Newline-delimited JSON-RPC on stdin/stdout, one flush per line. It speaks the handshake era
only: `server/discover` gets -32601 (method not found), so an SDK client in `auto` mode falls
back to `initialize`. Handles `initialize`, `notifications/initialized`, `ping`, `tools/list`
and `tools/call`; every other request gets -32601, every other notification is ignored.

Tools: `echo(message)` and `add(a, b)`; `--tools N` pads the list with `t2 .. t{N-1}` (each
returns its own name) up to N tools in total. `--page-size K` lists K tools per page (the
cursor is the offset of the page's first tool); 0, the default, lists them all at once.
`--init-delay S` sleeps S seconds before answering `initialize` (a slow-starting server);
`--init-cpu S` computes for S seconds of CPU time first (a server whose start is work).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

ECHO = {
    "name": "echo",
    "description": "Return the message unchanged.",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}
ADD = {
    "name": "add",
    "description": "Add two integers.",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


def build_tools(total: int) -> list[dict[str, Any]]:
    """`echo`, `add`, then filler tools up to `total` (at least the two real ones)."""
    filler = [
        {
            "name": f"t{i}",
            "description": f"Filler tool number {i}; returns its own name.",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
        }
        for i in range(2, total)
    ]
    return [ECHO, ADD, *filler]


class TinyServer:
    def __init__(
        self, tools: list[dict[str, Any]], page_size: int, init_delay_s: float, init_cpu_s: float = 0.0
    ) -> None:
        self.tools = tools
        self.page_size = page_size
        self.init_delay_s = init_delay_s
        self.init_cpu_s = init_cpu_s
        self._pages: dict[str, dict[str, Any]] = {}

    def list_tools(self, params: dict[str, Any]) -> dict[str, Any]:
        cursor = params.get("cursor") or "0"
        page = self._pages.get(cursor)
        if page is None:
            start = int(cursor)
            if not 0 <= start <= len(self.tools):
                raise ValueError(cursor)
            size = self.page_size or len(self.tools)
            end = min(start + size, len(self.tools))
            page = {"tools": self.tools[start:end]}
            if end < len(self.tools):
                page["nextCursor"] = str(end)
            self._pages[cursor] = page
        return page

    @staticmethod
    def call_tool(params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            text = str(args.get("message", ""))
        elif name == "add":
            text = str(int(args.get("a", 0)) + int(args.get("b", 0)))
        elif isinstance(name, str) and name.startswith("t") and name[1:].isdigit():
            text = name
        else:
            return {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True}
        return {"content": [{"type": "text", "text": text}], "isError": False}

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result for `method`; raises LookupError (unknown method) or ValueError (bad params)."""
        if method == "tools/call":
            return self.call_tool(params)
        if method == "tools/list":
            return self.list_tools(params)
        if method == "ping":
            return {}
        if method == "initialize":
            if self.init_cpu_s > 0:
                spent_until = time.process_time() + self.init_cpu_s
                while time.process_time() < spent_until:
                    sum(range(10_000))
            if self.init_delay_s > 0:
                time.sleep(self.init_delay_s)
            offered = params.get("protocolVersion")
            return {
                "protocolVersion": offered if offered in HANDSHAKE_VERSIONS else LATEST_VERSION,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "tiny", "version": "0.1.0"},
            }
        raise LookupError(method)

    def serve(self, stdin: Any, stdout: Any) -> None:
        for line in stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict) or "method" not in message or "id" not in message:
                continue  # a notification (initialized, cancelled, ...) or a response: nothing to say
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
            method = message["method"]
            try:
                reply["result"] = self.answer(method, message.get("params") or {})
            except LookupError:
                reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
            except (ValueError, TypeError) as exc:
                reply["error"] = {"code": INVALID_PARAMS, "message": f"Invalid params: {exc}"}
            stdout.write(json.dumps(reply, separators=(",", ":")) + "\n")
            stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=2, metavar="N", help="tools listed in total (default 2)")
    parser.add_argument("--page-size", type=int, default=0, metavar="K", help="tools per page; 0 = one page")
    parser.add_argument("--init-delay", type=float, default=0.0, metavar="S", help="sleep before initialize")
    parser.add_argument("--init-cpu", type=float, default=0.0, metavar="S", help="compute before initialize")
    args = parser.parse_args(argv)
    server = TinyServer(build_tools(args.tools), args.page_size, args.init_delay, args.init_cpu)
    try:
        server.serve(sys.stdin, sys.stdout)
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
