"""Peak client memory for one hostile answer, SDK stdio vs ours, in a fresh interpreter per run.

    python bench/transport_probe.py sdk|ours big_line|schema_bombs

`big_line`: a tool answers with one 20 MiB line (the chaos server's `big-line` mode; over our 16 MiB cap,
and small enough for the SDK, whose line reader copies its buffer per chunk, to finish in seconds). `schema_bombs`:
`tools/list` returns the chaos server's schema bombs. After a warm-up, the kernel's peak-RSS mark is
reset and the one request made; prints one JSON line: peak RSS growth, seconds, and the outcome.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
from harness import peak_rss_bytes, reset_peak_rss
from mcp.client import ClientSession
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from transport import BIG_LINE_MB

from mcpstation.connection._stdio import stdio_transport
from mcpstation.testing import rogue_server_params

ANSWER_TIMEOUT_S = 120.0  # the SDK side may never answer a listing it cannot parse
MODES = {"big_line": "big-line", "schema_bombs": "schema-bombs"}


async def probe(side: str, case: str) -> dict[str, Any]:
    params = rogue_server_params(MODES[case])
    transport = stdio_client(params) if side == "sdk" else stdio_transport(params, server=case)
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        if case == "big_line":
            await session.list_tools()
            await session.call_tool("echo", {"message": "warm"})
        base = reset_peak_rss()
        started = time.perf_counter()
        try:
            with anyio.fail_after(ANSWER_TIMEOUT_S):
                outcome = await _ask(session, case)
        except MCPError as exc:
            outcome = f"error {exc.error.code}"
        except TimeoutError:
            outcome = f"no answer within {ANSWER_TIMEOUT_S:g} s"
        seconds = time.perf_counter() - started
        peak = peak_rss_bytes() - base
    return {"side": side, "case": case, "peak_growth_bytes": peak, "seconds": seconds, "outcome": outcome}


async def _ask(session: ClientSession, case: str) -> str:
    if case == "big_line":
        result = await session.call_tool("big_line", {"mb": BIG_LINE_MB})
        return f"result of {len(result.content[0].text):,} chars"  # type: ignore[union-attr]
    listed = await session.list_tools()
    return f"{len(listed.tools)} tools listed"


if __name__ == "__main__":
    print(json.dumps(anyio.run(probe, sys.argv[1], sys.argv[2])))
