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
OUTSIDE_OUT_DIR = HERE / "outside" / "servers"
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
    repository: str = ""  # the public source repository, recorded with the listing
    files: tuple[tuple[str, str], ...] = ()  # (path under the temporary home, text) written before start
    prefix: str = ""  # npm: the package sits in <root>/npm/<prefix>/node_modules (own tree), else <root>/node_modules


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


def _package_dir(source: ServerSource, root: Path) -> Path:
    base = root / "npm" / source.prefix if source.prefix else root
    return base / "node_modules" / source.package


def _outside(
    name: str,
    package: str,
    version: str,
    repository: str,
    *args: str,
    files: tuple[tuple[str, str], ...] = (),
    **env: str,
) -> ServerSource:
    """A server of the outside fleet: npm, its own install tree, started by its own command."""
    return ServerSource(name, "npm", package, version, "", args, env, repository=repository, files=files, prefix=name)


# Servers of the outside evaluation (none of them in SOURCES). Placeholder credentials only; nothing
# here reaches a remote API, listing tools is local. Left out because their listing needs the network:
# @stripe/mcp 0.3.3 (a proxy to Stripe's remote server), @supabase/mcp-server-supabase 0.13.0 (asks its API);
# and two that do not start from an install without scripts: @azure-devops/mcp 2.10.0 (keytar's native
# module) and @heroku/mcp-server 1.2.8 (imports an SDK path its SDK range no longer exports); and
# @neondatabase/mcp-server-neon 0.6.5, @sentry/mcp-server 0.39.0, whose dependencies are fetched from GitHub.
OUTSIDE_SOURCES = (
    _outside("kubernetes", "mcp-server-kubernetes", "4.1.7", "Flux159/mcp-server-kubernetes"),
    _outside("linear", "linear-mcp-server", "0.1.0", "jerhadf/linear-mcp-server", LINEAR_API_KEY=PLACEHOLDER),
    _outside("gdrive", "@modelcontextprotocol/server-gdrive", "2025.1.14", "modelcontextprotocol/servers-archived",
             files=(("gdrive.json", '{"access_token": "placeholder"}'),), GDRIVE_CREDENTIALS_PATH="{tmp}/gdrive.json"),
    _outside("firecrawl", "firecrawl-mcp", "3.26.0", "firecrawl/firecrawl-mcp-server", FIRECRAWL_API_KEY=PLACEHOLDER),
    _outside("tavily", "tavily-mcp", "0.2.22", "tavily-ai/tavily-mcp", TAVILY_API_KEY=PLACEHOLDER),
    _outside("desktop-commander", "@wonderwhy-er/desktop-commander", "0.2.52", "wonderwhy-er/DesktopCommanderMCP"),
    _outside("mongodb", "mongodb-mcp-server", "3.0.4", "mongodb-js/mongodb-mcp-server"),
    _outside("elasticsearch", "@elastic/mcp-server-elasticsearch", "0.3.1", "elastic/mcp-server-elasticsearch",
             ES_URL="http://127.0.0.1:9", ES_API_KEY=PLACEHOLDER),
    _outside("airtable", "airtable-mcp-server", "1.14.0", "domdomegg/airtable-mcp-server",
             AIRTABLE_API_KEY=PLACEHOLDER),
    _outside("circleci", "@circleci/mcp-server-circleci", "0.20.0", "CircleCI-Public/mcp-server-circleci",
             CIRCLECI_TOKEN=PLACEHOLDER),
    _outside("mysql", "@benborla29/mcp-server-mysql", "2.0.9", "benborla/mcp-server-mysql",
             MYSQL_HOST="127.0.0.1", MYSQL_USER="root", MYSQL_PASS="", MYSQL_DB="test"),
    _outside("context7", "@upstash/context7-mcp", "4.1.1", "upstash/context7"),
    _outside("exa", "exa-mcp-server", "3.4.1", "exa-labs/exa-mcp-server", EXA_API_KEY=PLACEHOLDER),
    _outside("figma", "figma-developer-mcp", "0.13.2", "GLips/Figma-Context-MCP", "--stdio",
             FIGMA_API_KEY=PLACEHOLDER),
    _outside("hubspot", "@hubspot/mcp-server", "0.4.0", "HubSpot/mcp-server",
             PRIVATE_APP_ACCESS_TOKEN=PLACEHOLDER),
    _outside("aws-kb-retrieval", "@modelcontextprotocol/server-aws-kb-retrieval", "0.6.2",
             "modelcontextprotocol/servers-archived", AWS_ACCESS_KEY_ID=PLACEHOLDER,
             AWS_SECRET_ACCESS_KEY=PLACEHOLDER, AWS_REGION="us-east-1"),
)  # fmt: skip


def _params(source: ServerSource, root: Path, node: str, tmp: str) -> StdioServerParameters:
    args = [a.replace("{tmp}", tmp) for a in source.args]
    env = {"HOME": tmp, **{k: v.replace("{tmp}", tmp) for k, v in source.env.items()}}
    for relative, text in source.files:
        Path(tmp, relative).write_text(text)
    if source.registry == "npm":
        entry = source.entry
        if not entry:  # the package's own command
            manifest = json.loads((_package_dir(source, root) / "package.json").read_text())
            bins = manifest["bin"]
            entry = bins if isinstance(bins, str) else next(iter(bins.values()))
        script = _package_dir(source, root) / entry
        return StdioServerParameters(command=node, args=[str(script), *args], env=env, cwd=tmp)
    command = root / "venvs" / source.package / "bin" / source.entry
    return StdioServerParameters(command=str(command), args=args, env=env, cwd=tmp)


def _installed_version(source: ServerSource, root: Path) -> str:
    if source.registry == "npm":
        manifest = json.loads((_package_dir(source, root) / "package.json").read_text())
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


async def _collect(source: ServerSource, root: Path, node: str, out_dir: Path) -> None:
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
        **({"repository": source.repository} if source.repository else {}),
        "instructions": instructions,
        "tools": tools,
    }
    _store(out_dir / f"{source.name}.json", record)
    print(f"{source.name:22} {len(tools):4} tools  {source.package} {record['version']}")


def _store(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


async def _main(root: Path, node: str, only: set[str], fleet: str) -> int:
    failed = 0
    sources, out_dir = (OUTSIDE_SOURCES, OUTSIDE_OUT_DIR) if fleet == "outside" else (SOURCES, OUT_DIR)
    for source in sources:
        if only and source.name not in only:
            continue
        try:
            await _collect(source, root, node, out_dir)
        except Exception as exc:  # boundary: one server's failure is reported, the rest are still collected
            failed += 1
            print(f"{source.name:22} FAILED: {exc!r}", file=sys.stderr)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the directory install_servers.sh filled")
    parser.add_argument("--node", default=os.environ.get("NODE", "node"), help="Node 22 binary")
    parser.add_argument("--only", action="append", default=[], help="collect only this server (repeatable)")
    parser.add_argument("--fleet", choices=["own", "outside"], default="own", help="servers/ or outside/servers/")
    ns = parser.parse_args()
    sys.exit(anyio.run(_main, ns.root.resolve(), ns.node, set(ns.only), ns.fleet))


if __name__ == "__main__":
    main()
