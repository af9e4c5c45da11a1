"""A stdio MCP server that misbehaves on purpose, one fault per MODE.

    python -m mcpstation.testing.chaos_server MODE [--mb N] [--pidfile PATH] [--count N]

Always serves `ping_me` (→ "pong"). Modes:
  crash-on-call       tool `boom` kills the process (exit 1) mid-call
  hang-on-initialize  never answers anything: sleeps forever before serving
  hang-on-call        tool `hang` never returns
  exit-at-start       prints "fatal: missing API key" to stderr and exits 3
  stderr-flood        writes 10 MB to stderr, then serves
  garbage-stdout      prints non-JSON lines on stdout, then serves
  big-result          tool `big` returns `--mb` MB of text (default 50)
  grandchild          spawns `sleep 600` (its pid goes to `--pidfile`), then serves
  ignore-sigterm      ignores SIGTERM, serves, and lingers after stdin closes: only SIGKILL ends it
  escaped-grandchild  like grandchild, but the child leaves the session and process group (setsid)
  invalid-utf8        writes a line of invalid UTF-8 on stdout, then serves
  wrong-ids           writes responses to ids never asked for (twice each), then serves
  flood               tool `flood` sends `--count` tools/list_changed and log notifications and pings
                      the client a tenth as often (at most 10: within the station's request burst);
                      tool `list_count` says how many tools/list requests came in

Byte-level faults (a hand-written JSON-RPC server, handshake era only; each serves `echo`):
  notification-flood  tool `flood` starts `--count` (200,000) notifications as fast as the pipe takes
                      them (logs, progress for unknown tokens, resources/updated, unknown methods) and
                      answers at once; `flood_done` says whether it has ended, `stop_flood` ends it
  list-changed-storm  tools/list_changed back to back (`--count`, 100,000) from `initialized` on, and
                      after every tools/list, whose list differs each time (`gen_N`) and is answered
                      50 ms late; `list_stats` says how many tools/list came and most at once
  exit-with-grandchild starts `sleep 600` holding our stdout (pid to `--pidfile`); `exit_now` makes the
                      leader exit mid-call without answering
  lying-answers       around every answer: a pre-emptive answer to the next id, one to the id as a
                      string, one to an id never used, and a second answer; all carry "INJECTED"
                      (for tools/list: a tool `injected_tool`)
  pre-answers         before every answer, an answer to each id from 0 to 1,000 (a forged result that
                      fits initialize, tools/list and tools/call, with "INJECTED" and `injected_tool`);
                      after it, a second forged answer to the real id
  big-line            `big_line(mb=50, id_last=false)` answers with one line of `mb` MiB, its id first
                      (as Python servers write it) or last (as TypeScript servers do)
  endless-line        `endless` answers "ok", then writes bytes without a newline forever
  request-flood       `request_flood` sends `--count` (10,000) requests to the client at once:
                      sampling with a huge token budget, elicitation asking for a password, roots,
                      ping, unknown methods; `answers_seen` counts the answers it got, by kind
  schema-bombs        tools/list: `echo` plus a 500,000-value enum, a 1 MiB description, 100,000
                      properties, cyclic $refs, a remote $ref, a schema nested 60 deep, and `tree`
                      (legitimately recursive)
  too-deep-listing    tools/list nests a schema 5,000 levels deep (no parser here accepts it)
  drip-handshake      answers initialize one byte every 0.1 s
  unsupported-version answers initialize with protocol version 1999-01-01
  initialize-error    answers initialize with a JSON-RPC error
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from mcpstation.testing._rogue import DEFAULT_COUNTS, ROGUE_MODES, serve_rogue

MODES = (
    "crash-on-call", "hang-on-initialize", "hang-on-call", "exit-at-start", "stderr-flood",
    "garbage-stdout", "big-result", "grandchild", "ignore-sigterm", "escaped-grandchild", "invalid-utf8",
    "wrong-ids", "flood", *ROGUE_MODES,
)  # fmt: skip
FOREVER_S = 365 * 24 * 3600.0
STDERR_FLOOD_BYTES = 10 * 1024 * 1024
EXIT_AT_START_CODE = 3
CRASH_EXIT_CODE = 1
FLOOD_PINGS = 10  # pings `flood` sends at most: the station takes 20 requests from a server at once, then 10/s
MODE_TOOLS = {
    "crash-on-call": ["boom"],
    "hang-on-call": ["hang"],
    "big-result": ["big"],
    "flood": ["flood", "list_count"],
}


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def build_chaos_server(mode: str, big_mb: int, count: int = 100) -> Server[Any]:
    """A low-level server exposing `ping_me` plus the fault tools of `mode`, if it has any."""
    names = ["ping_me", *MODE_TOOLS.get(mode, [])]
    tools = [types.Tool(name=name, input_schema={"type": "object"}) for name in names]
    list_requests = [0]

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        list_requests[0] += 1
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in names:
            return types.CallToolResult(content=[types.TextContent(type="text", text="Unknown tool")], is_error=True)
        if params.name == "boom":
            os._exit(CRASH_EXIT_CODE)
        if params.name == "hang":
            await anyio.sleep(FOREVER_S)
        if params.name == "big":
            return _text("x" * (big_mb * 1024 * 1024))
        if params.name == "list_count":
            return _text(str(list_requests[0]))
        if params.name == "flood":
            for i in range(count):
                await ctx.session.send_tool_list_changed()
                await ctx.session.send_log_message(level="info", data=f"flood {i}")
            for _ in range(min(count // 10, FLOOD_PINGS)):
                await ctx.session.send_ping()
            return _text(f"flooded {count}")
        return _text("pong")

    return Server("chaos", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


def _misbehave_at_start(mode: str, pidfile: Path | None) -> None:
    if mode == "exit-at-start":
        print("fatal: missing API key", file=sys.stderr, flush=True)
        sys.exit(EXIT_AT_START_CODE)
    if mode == "stderr-flood":
        line = "chaos: " + "#" * 1016 + "\n"  # 1 KiB per line
        for _ in range(STDERR_FLOOD_BYTES // len(line)):
            sys.stderr.write(line)
        sys.stderr.flush()
    elif mode == "garbage-stdout":
        sys.stdout.write("Starting chaos server...\nnot json {\n")
        sys.stdout.flush()
    elif mode == "grandchild":
        # Detached from our pipes so only the orphaned process is the fault, not a held-open pipe.
        child = subprocess.Popen(
            ["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        if pidfile is not None:
            pidfile.write_text(f"{child.pid}\n")
    elif mode == "escaped-grandchild":
        child = subprocess.Popen(
            ["sleep", "600"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        if pidfile is not None:
            pidfile.write_text(f"{child.pid}\n")
    elif mode == "invalid-utf8":
        sys.stdout.buffer.write(b"\xff\xfe not utf-8 \xc3\x28\n")
        sys.stdout.flush()
    elif mode == "wrong-ids":
        for request_id in (424242, 424242, "nobody-asked"):
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}}) + "\n")
        sys.stdout.flush()
    elif mode == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


async def _serve(mode: str, big_mb: int, count: int) -> None:
    if mode == "hang-on-initialize":
        await anyio.sleep(FOREVER_S)
    server = build_chaos_server(mode, big_mb, count)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
    if mode == "ignore-sigterm":
        await anyio.sleep(FOREVER_S)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mcpstation.testing.chaos_server",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--mb", type=int, default=50, help="size of `big`'s result in MB (default 50)")
    parser.add_argument("--pidfile", type=Path, help="where `grandchild` writes its child's pid")
    parser.add_argument("--count", type=int, help="messages a flooding mode sends (`flood`: 100)")
    args = parser.parse_args(argv)
    if args.mode in ROGUE_MODES:
        serve_rogue(args.mode, count=args.count or DEFAULT_COUNTS.get(args.mode, 0), pidfile=args.pidfile)
        return
    if args.count is None:
        args.count = 100
    _misbehave_at_start(args.mode, args.pidfile)
    anyio.run(_serve, args.mode, args.mb, args.count)


if __name__ == "__main__":
    main()
