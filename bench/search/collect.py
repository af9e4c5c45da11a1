"""Collect the real tool lists of public MCP servers with the raw SDK and store them as JSON.

Run `bench/search/install_servers.sh DIR` first (it installs the servers from npm and PyPI into DIR,
outside the repository), then:

    .venv/bin/python bench/search/collect.py --root DIR [--node PATH] [--only NAME ...]

Each server is started over stdio with placeholder credentials where its start-up insists on one
(nothing here calls a remote API: listing tools is local), its `tools/list` is walked page by page,
and `servers/<name>.json` gets the package, version, instructions and tools as the server sent them.
Only the lists are stored; no server code is.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client import Client

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "servers"
LIST_TIMEOUT_S = 60.0  # npx-free start of a Node server on a loaded 2-core machine, plus the listing
PLACEHOLDER = "placeholder-not-a-credential"


@dataclass(frozen=True)
class ServerSource:
    name: str
    registry: str  # "npm" | "pypi"
    package: str
    version: str
    entry: str  # npm: script path under node_modules/<package>; pypi: console script in the venv
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    needs_git_repo: bool = False  # mcp-server-git refuses to start outside a repository


SOURCES = (
    ServerSource("filesystem", "npm", "@modelcontextprotocol/server-filesystem", "2026.8.31", "dist/index.js",
                 ("{tmp}",)),
    ServerSource("memory", "npm", "@modelcontextprotocol/server-memory", "2026.8.31", "dist/index.js"),
    ServerSource("sequential-thinking", "npm", "@modelcontextprotocol/server-sequential-thinking", "2026.8.31",
                 "dist/index.js"),
    ServerSource("everything", "npm", "@modelcontextprotocol/server-everything", "2026.8.31", "dist/index.js"),
    ServerSource("github", "npm", "@modelcontextprotocol/server-github", "2025.4.8", "dist/index.js",
                 env={"GITHUB_PERSONAL_ACCESS_TOKEN": PLACEHOLDER}),
    ServerSource("gitlab", "npm", "@modelcontextprotocol/server-gitlab", "2025.4.25", "dist/index.js",
                 env={"GITLAB_PERSONAL_ACCESS_TOKEN": PLACEHOLDER, "GITLAB_API_URL": "http://127.0.0.1:9/api/v4"}),
    ServerSource("playwright", "npm", "@playwright/mcp", "0.0.83", "cli.js", ("--headless",)),
    ServerSource("puppeteer", "npm", "@modelcontextprotocol/server-puppeteer", "2025.5.12", "dist/index.js"),
    ServerSource("notion", "npm", "@notionhq/notion-mcp-server", "2.5.2", "bin/cli.mjs",
                 env={"NOTION_TOKEN": PLACEHOLDER}),
    ServerSource("slack", "npm", "@modelcontextprotocol/server-slack", "2025.4.25", "dist/index.js",
                 env={"SLACK_BOT_TOKEN": PLACEHOLDER, "SLACK_TEAM_ID": "T0000000"}),
    ServerSource("postgres", "npm", "@modelcontextprotocol/server-postgres", "0.6.2", "dist/index.js",
                 ("postgresql://postgres@127.0.0.1:5432/test",)),
    ServerSource("redis", "npm", "@modelcontextprotocol/server-redis", "2025.4.25", "dist/index.js",
                 ("redis://127.0.0.1:6379",)),
    ServerSource("brave-search", "npm", "@modelcontextprotocol/server-brave-search", "0.6.2", "dist/index.js",
                 env={"BRAVE_API_KEY": PLACEHOLDER}),
    ServerSource("google-maps", "npm", "@modelcontextprotocol/server-google-maps", "0.6.2", "dist/index.js",
                 env={"GOOGLE_MAPS_API_KEY": PLACEHOLDER}),
    ServerSource("git", "pypi", "mcp-server-git", "", "mcp-server-git", ("--repository", "{tmp}"),
                 needs_git_repo=True),
    ServerSource("fetch", "pypi", "mcp-server-fetch", "", "mcp-server-fetch"),
    ServerSource("time", "pypi", "mcp-server-time", "", "mcp-server-time", ("--local-timezone", "UTC")),
    ServerSource("sqlite", "pypi", "mcp-server-sqlite", "", "mcp-server-sqlite", ("--db-path", "{tmp}/bench.db")),
    ServerSource("arxiv", "pypi", "arxiv-mcp-server", "", "arxiv-mcp-server", ("--storage-path", "{tmp}")),
)  # fmt: skip


def _params(source: ServerSource, root: Path, node: str, tmp: str) -> StdioServerParameters:
    args = [a.replace("{tmp}", tmp) for a in source.args]
    env = {"HOME": tmp, **source.env}
    if source.registry == "npm":
        script = root / "node_modules" / source.package / source.entry
        return StdioServerParameters(command=node, args=[str(script), *args], env=env, cwd=tmp)
    command = root / "venvs" / source.package / "bin" / source.entry
    return StdioServerParameters(command=str(command), args=args, env=env, cwd=tmp)


def _installed_version(source: ServerSource, root: Path) -> str:
    if source.registry == "npm":
        manifest = json.loads((root / "node_modules" / source.package / "package.json").read_text())
        return str(manifest["version"])
    site = root / "venvs" / source.package / "lib"
    dist = source.package.replace("-", "_")
    for meta in site.glob(f"python*/site-packages/{dist}-*.dist-info/METADATA"):
        for line in meta.read_text().splitlines():
            if line.startswith("Version: "):
                return line.removeprefix("Version: ")
    return "unknown"


async def _list(params: StdioServerParameters) -> tuple[str | None, str | None, list[dict[str, Any]]]:
    tools: list[dict[str, Any]] = []
    with anyio.fail_after(LIST_TIMEOUT_S):
        async with Client(params, mode="legacy") as client:
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
                tools += [_tool_json(t) for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
            info = client.server_info
            return (info.name if info else None), client.instructions, tools


def _tool_json(tool: types.Tool) -> dict[str, Any]:
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _collect(source: ServerSource, root: Path, node: str) -> None:
    tmp = tempfile.mkdtemp(prefix=f"collect-{source.name}-")
    try:
        if source.needs_git_repo:
            await anyio.run_process(["git", "init", "-q", tmp])
        name, instructions, tools = await _list(_params(source, root, node, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    record = {
        "server": source.name,
        "registry": source.registry,
        "package": source.package,
        "version": _installed_version(source, root),
        "server_info_name": name,
        "instructions": instructions,
        "tools": tools,
    }
    OUT_DIR.mkdir(exist_ok=True)
    (OUT_DIR / f"{source.name}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"{source.name:22} {len(tools):4} tools  {source.package} {record['version']}")


async def _main(root: Path, node: str, only: set[str]) -> int:
    failed = 0
    for source in SOURCES:
        if only and source.name not in only:
            continue
        try:
            await _collect(source, root, node)
        except Exception as exc:  # boundary: one server's failure is reported, the rest are still collected
            failed += 1
            print(f"{source.name:22} FAILED: {exc!r}", file=sys.stderr)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the directory install_servers.sh filled")
    parser.add_argument("--node", default=os.environ.get("NODE", "node"), help="Node 22 binary")
    parser.add_argument("--only", action="append", default=[], help="collect only this server (repeatable)")
    ns = parser.parse_args()
    sys.exit(anyio.run(_main, ns.root.resolve(), ns.node, set(ns.only)))


if __name__ == "__main__":
    main()
