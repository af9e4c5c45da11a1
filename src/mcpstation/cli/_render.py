"""Rich tables for people; the JSON shapes for machines live on the models' `to_dict`."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from mcpstation.catalog import (
    CatalogPrompt,
    CatalogResource,
    CatalogTemplate,
    CatalogTool,
    SearchHit,
    ToolResult,
    format_tokens,
)
from mcpstation.status import ServerStatus, StationStatus

_STATE_STYLES = {
    "READY": "green",
    "STARTING": "yellow",
    "BACKING_OFF": "yellow",
    "STOPPING": "dim",
    "STOPPED": "dim",
    "DISABLED": "dim",
    "FAILED": "bold red",
    "PENDING": "yellow",
    "SHADOWED": "dim",
    "REFUSED": "red",
}


def status_table(status: StationStatus) -> Table:
    table = Table(title="servers", expand=False)
    columns = (
        "server",
        "state",
        "transport",
        "version",
        "tools",
        "tokens",
        "prompts",
        "resources",
        "templates",
        "error",
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for s in status.servers:
        table.add_row(
            s.name,
            Text(s.state, style=_STATE_STYLES.get(s.state, "")),
            s.transport,
            s.protocol_version or "-",
            str(s.tools),
            f"~{format_tokens(s.tokens)}" if s.tokens else "-",
            str(s.prompts),
            str(s.resources),
            str(s.templates),
            Text(s.error or "", style="red"),
        )
    return table


def conflicts_table(status: StationStatus) -> Table | None:
    if not status.conflicts:
        return None
    table = Table(title="conflicts (skipped)")
    for column in ("kind", "name", "server", "reason"):
        table.add_column(column, overflow="fold")
    for c in status.conflicts:
        table.add_row(c["kind"], c["name"], c["server"], c["reason"])
    return table


def tools_table(tools: Sequence[CatalogTool], *, tokens: Sequence[int] | None = None) -> Table:
    """The tools; with `tokens` (one per tool), their estimated schema tokens and the total in the title."""
    title = f"{len(tools)} tools" + (f" (~{format_tokens(sum(tokens))} tokens)" if tokens is not None else "")
    table = Table(title=title)
    columns = (
        ("name", "server", "tool", "tokens", "description")
        if tokens is not None
        else ("name", "server", "tool", "description")
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for index, t in enumerate(tools):
        counted = (str(tokens[index]),) if tokens is not None else ()
        table.add_row(t.name, t.server, t.tool, *counted, _first_line(t.description))
    return table


def search_table(query: str, hits: Sequence[SearchHit]) -> Table:
    table = Table(title=Text(f"{len(hits)} tools for {query!r}"))
    for column in ("score", "name", "server", "description"):
        table.add_column(column, overflow="fold")
    for hit in hits:
        table.add_row(f"{hit.score:.2f}", hit.tool.name, hit.tool.server, _first_line(hit.tool.description))
    return table


def prompts_table(prompts: Sequence[CatalogPrompt]) -> Table:
    table = Table(title=f"{len(prompts)} prompts")
    for column in ("name", "server", "arguments", "description"):
        table.add_column(column, overflow="fold")
    for p in prompts:
        args = ", ".join(a.name + ("" if a.required else "?") for a in p.arguments)
        table.add_row(p.name, p.server, args, _first_line(p.description))
    return table


def resources_table(resources: Sequence[CatalogResource], templates: Sequence[CatalogTemplate]) -> Table:
    table = Table(title=f"{len(resources)} resources, {len(templates)} templates")
    for column in ("kind", "uri", "server", "name", "mime type"):
        table.add_column(column, overflow="fold")
    for r in resources:
        table.add_row("resource", r.uri, r.server, r.name, r.mime_type or "")
    for t in templates:
        table.add_row("template", t.uri_template, t.server, t.name, t.mime_type or "")
    return table


def result_text(result: ToolResult) -> Text:
    if result.ok:
        return Text(result.text)
    return Text(result.text, style="red")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def servers_table(servers: Sequence[ServerStatus]) -> Table:
    table = Table(title=f"{len(servers)} servers")
    for column in ("server", "origin", "state", "transport", "target", "version", "tools", "error"):
        table.add_column(column, overflow="fold")
    for s in servers:
        table.add_row(
            s.name,
            s.origin,
            Text(s.state, style=_STATE_STYLES.get(s.state, "")),
            s.transport,
            s.target,
            s.protocol_version or "-",
            str(s.tools),
            Text(s.error or "", style="red"),
        )
    return table
