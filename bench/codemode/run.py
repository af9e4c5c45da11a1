"""Code mode against one call per step, on the same tasks and fleet, played by a scripted agent (no API key).

    .venv/bin/python bench/codemode/run.py                       # table; JSON to bench/results/codemode.json
    .venv/bin/python bench/codemode/run.py --json other.json

The fleet: our demo server as `calc` (it computes), and 11 in-process servers listing the real tool lists of
public MCP servers (bench/search/servers), answering each call with what they were asked. Four arms:
`direct` hands the model every visible tool and each turn's calls go through `call_tool`; `direct+search`
(tool search on, nothing pinned, code mode off) hands it the two search meta-tools: one turn searches for
each tool the task needs, then the same plan's calls go through `mcp_call_tool`; `code` hands it
`mcp_run_code` alone and the task's script goes through it; `code+search` (tool search on, nothing pinned)
hands it the search meta-tools and `mcp_run_code`: one turn searches, the next runs the script calling
the tools by name with `call_tool`. A search turn queries the first sentence of each needed tool's
description, all at once; `search_found` is the share found in the top 5.

What is counted, per task and arm, with the station's own token estimator (fitted against o200k_base,
`mcpstation.catalog.tokens`; no tokenizer package is installed here):

- `definition_tokens`: the tool definitions the model is handed (read again at every turn);
- `result_tokens`: the tool-result text entering the model's context;
- `turns`: model turns (round trips), the final answer's included;
- `input_tokens`: what the model reads over all its turns: definitions + prompt + the history so far;
- `history_tokens`: the part of `input_tokens` that is the conversation (calls, results, script) re-read;
- `output_tokens`: what the model writes (tool calls as JSON, or the script, and the answer);
- `passed`: the task's checker on the agent's final answer.

Tokens and turns are deterministic (the same scripts, the same results); `wall_s` is one run's time and noisy.
"""

from __future__ import annotations

import argparse
import ast
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from mcpstation import Caller, Face, InProcessServerSpec, Role, Station, StationConfig
from mcpstation.catalog import CatalogTool, ToolResult, estimate_text_tokens, estimate_tool_tokens
from mcpstation.codemode import script_value
from mcpstation.testing.demo_server import build_demo_server

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tasks import TASKS, Task

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "bench" / "search" / "servers"
PUBLIC = (
    "github", "gitlab", "slack", "notion", "filesystem", "git", "playwright", "memory", "redis", "google-maps",
    "brave-search",
)  # fmt: skip
MODEL = Caller("model", Role.USER, Face.LLM)
ARMS = ("direct", "direct+search", "code", "code+search")
START_S = 60.0


def _echo_server(name: str) -> Server[Any]:
    """Lists public server `name`'s real tools; a call answers `{"server", "tool", "arguments"}`."""
    record = json.loads((SERVERS / f"{name}.json").read_text())
    tools = [types.Tool.model_validate(t).model_copy(update={"output_schema": None}) for t in record["tools"]]

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        answer = {"server": name, "tool": params.name, "arguments": params.arguments or {}}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(answer))], structured_content=answer
        )

    return Server(name, version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def fleet(code_mode: str, tool_search: str = "off") -> StationConfig:
    servers = [InProcessServerSpec(name="calc", server=build_demo_server("calc"))]
    servers += [InProcessServerSpec(name=name, server=_echo_server(name)) for name in PUBLIC]
    return StationConfig(servers=servers, station={"tool_search": tool_search, "code_mode": code_mode})


class Transcript:
    """What a model reads and writes over one task, turn by turn."""

    def __init__(self, tools: list[CatalogTool], prompt: str) -> None:
        self.definition_tokens = sum(estimate_tool_tokens(tool) for tool in tools)
        self.prompt_tokens = estimate_text_tokens(prompt)
        self.history = 0
        self.turns = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.result_tokens = 0
        self.history_tokens = 0  # of input_tokens: the conversation so far, read again at each turn
        self.tool_calls = 0
        self.found: float | None = None  # share of the needed tools that search put in its top 5 (search arm)

    def model_turn(self, written: str) -> None:
        self.turns += 1
        self.input_tokens += self.definition_tokens + self.prompt_tokens + self.history
        self.history_tokens += self.history
        tokens = estimate_text_tokens(written)
        self.output_tokens += tokens
        self.history += tokens

    def tool_results(self, texts: list[str]) -> None:
        for text in texts:
            tokens = estimate_text_tokens(text)
            self.result_tokens += tokens
            self.history += tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "definition_tokens": self.definition_tokens,
            "result_tokens": self.result_tokens,
            "turns": self.turns,
            "input_tokens": self.input_tokens,
            "history_tokens": self.history_tokens,
            "output_tokens": self.output_tokens,
            "tool_calls": self.tool_calls,
        }


def _calls_json(calls: list[tuple[str, dict[str, Any]]]) -> str:
    return json.dumps([{"name": name, "arguments": arguments} for name, arguments in calls])


async def _call_all(station: Station, calls: list[tuple[str, dict[str, Any]]]) -> list[ToolResult]:
    """One turn's calls, at once, as a model's parallel tool calls are run."""
    results: list[ToolResult | None] = [None] * len(calls)

    async def one(index: int, name: str, arguments: dict[str, Any]) -> None:
        results[index] = await station.call_tool(name, arguments, caller=MODEL)

    async with anyio.create_task_group() as group:
        for index, (name, arguments) in enumerate(calls):
            group.start_soon(one, index, name, arguments)
    return [result for result in results if result is not None]


async def _search(station: Station, transcript: Transcript, needed: list[str]) -> None:
    """One model turn searching for each tool in `needed` at once; notes the share found in the top 5."""
    catalog = {tool.name: tool for tool in station.tools}
    searches = [("mcp_search_tools", {"query": catalog[name].description.split(".")[0]}) for name in needed]
    transcript.model_turn(_calls_json(searches))
    found = await _call_all(station, searches)
    transcript.tool_results([result.text for result in found])
    hits = [[hit["name"] for hit in result.structured["tools"]] for result in found if result.structured]
    transcript.found = sum(name in names for name, names in zip(needed, hits, strict=True)) / len(needed)


async def direct(station: Station, task: Task) -> dict[str, Any]:
    """One call per step; with tool search on, a search turn first and each call through `mcp_call_tool`."""
    surface = station.tools_for(MODEL)
    transcript = Transcript(surface, task.prompt)
    searching = any(tool.name == "mcp_search_tools" for tool in surface)
    plan = task.direct()
    started = time.perf_counter()
    if searching:
        await _search(station, transcript, by_name(task.script)[1])
    calls = next(plan)
    answer: Any = None
    while True:
        sent = [("mcp_call_tool", {"name": n, "arguments": a}) for n, a in calls] if searching else calls
        transcript.model_turn(_calls_json(sent))
        transcript.tool_calls += len(calls)
        results = await _call_all(station, sent)
        transcript.tool_results([result.text for result in results])
        try:
            calls = plan.send([script_value(result) for result in results])
        except StopIteration as done:
            answer = done.value
            break
    transcript.model_turn(json.dumps(answer))
    extra = {"search_found": transcript.found} if transcript.found is not None else {}
    passed = task.check(answer)
    return {**transcript.to_dict(), **extra, "passed": passed, "wall_s": round(time.perf_counter() - started, 3)}


class _ByName(ast.NodeTransformer):
    """`await mcp_x(a=1)` becomes `await call_tool("mcp_x", {"a": 1})`: a script calling tools it found by search."""

    def __init__(self) -> None:
        self.tools: list[str] = []

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id.startswith("mcp_"):
            self.tools.append(node.func.id)
            arguments = ast.Dict(
                keys=[ast.Constant(k.arg) for k in node.keywords], values=[k.value for k in node.keywords]
            )
            return ast.Call(ast.Name("call_tool", ast.Load()), [ast.Constant(node.func.id), arguments], [])
        return node


def by_name(script: str) -> tuple[str, list[str]]:
    """The script as a model with tool search writes it, and the tools it calls (in order, once each)."""
    transformer = _ByName()
    tree = ast.fix_missing_locations(transformer.visit(ast.parse(script)))
    return ast.unparse(tree) + "\n", list(dict.fromkeys(transformer.tools))


async def code(station: Station, task: Task) -> dict[str, Any]:
    surface = station.tools_for(MODEL)
    transcript = Transcript(surface, task.prompt)
    started = time.perf_counter()
    script = task.script
    if len(surface) > 1:  # tool search on: find each tool first (one turn, searches at once), then call by name
        script, needed = by_name(task.script)
        await _search(station, transcript, needed)
    transcript.model_turn(_calls_json([("mcp_run_code", {"code": script})]))
    result = await station.call_tool("mcp_run_code", {"code": script}, caller=MODEL)
    transcript.tool_results([result.text])
    structured = result.structured or {}
    transcript.tool_calls = len(structured.get("calls", []))
    answer = structured.get("value")
    transcript.model_turn(json.dumps(answer))
    passed = result.ok and task.check(answer)
    extra = {"search_found": transcript.found} if transcript.found is not None else {}
    return {**transcript.to_dict(), **extra, "passed": passed, "wall_s": round(time.perf_counter() - started, 3)}


def _saving(direct_value: float, code_value: float) -> float:
    return round(1 - code_value / direct_value, 3) if direct_value else 0.0


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_kind: dict[str, Any] = {}
    for kind in ("independent", "sequential", "iterative"):
        chosen = [row for row in rows if row["kind"] == kind]
        summary: dict[str, Any] = {}
        for arm in ARMS:
            summary[arm] = {
                key: sum(row[arm][key] for row in chosen)
                for key in ("input_tokens", "history_tokens", "result_tokens", "turns", "tool_calls")
            }
            summary[arm]["pass_rate"] = statistics.fmean(1.0 if row[arm]["passed"] else 0.0 for row in chosen)
        for arm in ARMS[1:]:
            summary[arm]["fewer_input_tokens"] = _saving(
                summary["direct"]["input_tokens"], summary[arm]["input_tokens"]
            )
            summary[arm]["fewer_turns"] = _saving(summary["direct"]["turns"], summary[arm]["turns"])
        # the fair pair for code with search: the same search surface without code mode
        searched, coded = summary["direct+search"], summary["code+search"]
        coded["fewer_input_tokens_than_direct_search"] = _saving(searched["input_tokens"], coded["input_tokens"])
        coded["fewer_turns_than_direct_search"] = _saving(searched["turns"], coded["turns"])
        by_kind[kind] = summary
    return by_kind


async def measure() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with anyio.fail_after(START_S):
        async with (
            Station(fleet("off")) as plain,
            Station(fleet("off", tool_search="on")) as plain_searched,
            Station(fleet("on")) as coded,
            Station(fleet("on", tool_search="on")) as searched,
        ):
            await plain_searched.live_catalog.index.wait_current(START_S)
            await searched.live_catalog.index.wait_current(START_S)
            stations = {"direct": plain, "direct+search": plain_searched, "code": coded, "code+search": searched}
            surfaces = {arm: {"tools": len(station.tools_for(MODEL))} for arm, station in stations.items()}
            for task in TASKS:
                rows.append(
                    {"task": task.name, "kind": task.kind, "direct": await direct(plain, task),
                     "direct+search": await direct(plain_searched, task),
                     "code": await code(coded, task), "code+search": await code(searched, task)}
                )  # fmt: skip
    return rows, surfaces


def main(out: Path) -> None:
    rows, surfaces = anyio.run(measure)
    summary = summarize(rows)
    header = f"{'task':<16}{'kind':<13}{'arm':<13}{'defs':>7}{'results':>9}{'turns':>7}{'input':>9}{'output':>8}"
    header += f"{'calls':>7}  ok"
    print(header)
    for row in rows:
        for arm in ARMS:
            r = row[arm]
            print(
                f"{row['task']:<16}{row['kind']:<13}{arm:<13}{r['definition_tokens']:>7}{r['result_tokens']:>9}"
                f"{r['turns']:>7}{r['input_tokens']:>9}{r['output_tokens']:>8}{r['tool_calls']:>7}  {r['passed']}"
            )
    print()
    for kind, s in summary.items():
        for arm in ARMS[1:]:
            d, c = s["direct"], s[arm]
            print(
                f"{kind:<13}{arm:<13} input tokens {d['input_tokens']:>8} -> {c['input_tokens']:>7} "
                f"({c['fewer_input_tokens']:.0%} fewer), turns {d['turns']:>3} -> {c['turns']:>3} "
                f"({c['fewer_turns']:.0%} fewer), pass {d['pass_rate']:.0%} / {c['pass_rate']:.0%}"
            )
        c = s["code+search"]
        print(
            f"{kind:<13}code+search vs direct+search: {c['fewer_input_tokens_than_direct_search']:.0%} fewer input "
            f"tokens, {c['fewer_turns_than_direct_search']:.0%} fewer turns"
        )
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    record = {
        "bench": "codemode",
        "tokens": "mcpstation.catalog.tokens estimator (o200k_base fit)",
        "fleet": ["calc (demo server)", *PUBLIC],
        "surfaces": surfaces,
        "tasks": rows,
        "by_kind": summary,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "commit": commit.stdout.strip(),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "codemode.json")
    main(parser.parse_args().json)
