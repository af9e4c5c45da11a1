"""Rich tables and text for people, drawn from the JSON shapes machines get (the models' `to_dict`).

Both paths of a command (the running station's answer, a one-shot station's objects) arrive here
as those shapes, so a person sees the same output whichever answered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

Shape = Mapping[str, Any]

_STATE_STYLES = {
    "READY": "green",
    "IDLE": "cyan",
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


STATUS_COLUMNS = (
    "server", "state", "transport", "version", "tools", "tokens", "prompts", "resources", "templates", "error",
)  # fmt: skip
# Dropped in this order when the table is wider than the console (the error goes below it first).
_NARROW_DROPS = ("templates", "resources", "prompts", "tokens", "version", "transport")


def status_table(status: Shape) -> Table:
    """`StationStatus.to_dict()` as a table of servers, every column."""
    return _status_table(status, STATUS_COLUMNS)


def status_view(status: Shape, width: int) -> list[RenderableType]:
    """The status table fitted to `width` columns without breaking a word.

    When every column fits, the whole table. Otherwise each error goes below the table as its own
    paragraph (wrapped at spaces), and the columns that still do not fit are left out, least
    needed first; the rest are never wrapped, so `FAILED` stays one word.
    """
    columns = list(STATUS_COLUMNS)
    rows = [_status_cells(s) for s in status["servers"]]
    if _natural_width(columns, rows) <= width:
        return [_status_table(status, STATUS_COLUMNS)]
    columns.remove("error")
    for column in _NARROW_DROPS:
        if _natural_width(columns, rows) <= width:
            break
        columns.remove(column)
    parts: list[RenderableType] = [_status_table(status, tuple(columns), no_wrap=True)]
    for s in status["servers"]:
        if s["error"]:
            parts.append(Text(f"{s['name']}: {s['error']}", style="red", overflow="fold"))
    return parts


def _status_cells(s: Shape) -> dict[str, str]:
    from mcpstation.catalog.tokens import format_tokens

    return {
        "server": s["name"],
        "state": s["state"],
        "transport": s["transport"],
        "version": s["protocol_version"] or "-",
        "tools": str(s["tools"]),
        "tokens": f"~{format_tokens(s['tokens'])}" if s.get("tokens") else "-",
        "prompts": str(s["prompts"]),
        "resources": str(s["resources"]),
        "templates": str(s["templates"]),
        "error": s["error"] or "",
    }


def _natural_width(columns: Sequence[str], rows: Sequence[dict[str, str]]) -> int:
    """The width of a table of `columns` with nothing wrapped: cells, one space each side, borders."""
    cells = sum(max([len(column), *(len(row[column]) for row in rows)]) for column in columns)
    return cells + 3 * len(columns) + 1


def _status_table(status: Shape, columns: Sequence[str], *, no_wrap: bool = False) -> Table:
    table = Table(title="servers", expand=False)
    for column in columns:
        wraps = column == "error" and not no_wrap
        table.add_column(column, overflow="fold" if wraps else "ellipsis", no_wrap=not wraps)
    for s in status["servers"]:
        cells = _status_cells(s)
        row: list[str | Text] = []
        for column in columns:
            if column == "state":
                row.append(Text(cells[column], style=_STATE_STYLES.get(cells[column], "")))
            elif column == "error":
                row.append(Text(cells[column], style="red"))
            else:
                row.append(cells[column])
        table.add_row(*row)
    return table


def conflicts_table(status: Shape) -> Table | None:
    if not status["conflicts"]:
        return None
    table = Table(title="conflicts (skipped)")
    for column in ("kind", "name", "server", "reason"):
        table.add_column(column, overflow="fold")
    for c in status["conflicts"]:
        table.add_row(c["kind"], c["name"], c["server"], c["reason"])
    return table


def tools_table(tools: Sequence[Shape]) -> Table:
    """The tools; when they carry `tokens`, their estimated schema tokens and the total in the title."""
    from mcpstation.catalog.tokens import format_tokens

    counted = all("tokens" in t for t in tools) and bool(tools)
    total = sum(int(t["tokens"]) for t in tools) if counted else 0
    table = Table(title=f"{len(tools)} tools" + (f" (~{format_tokens(total)} tokens)" if counted else ""))
    columns = (
        ("name", "server", "tool", "tokens", "description") if counted else ("name", "server", "tool", "description")
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for t in tools:
        tokens = (str(t["tokens"]),) if counted else ()
        table.add_row(t["name"], t["server"], t["tool"], *tokens, _first_line(t["description"]))
    return table


def search_table(query: str, hits: Sequence[Shape]) -> Table:
    """Search hits as `tools search --json` shapes them: name, server, tool, score, description."""
    table = Table(title=Text(f"{len(hits)} tools for {query!r}"))
    for column in ("score", "name", "server", "description"):
        table.add_column(column, overflow="fold")
    for hit in hits:
        table.add_row(f"{hit['score']:.2f}", hit["name"], hit["server"], _first_line(hit["description"]))
    return table


def prompts_table(prompts: Sequence[Shape]) -> Table:
    table = Table(title=f"{len(prompts)} prompts")
    for column in ("name", "server", "arguments", "description"):
        table.add_column(column, overflow="fold")
    for p in prompts:
        args = ", ".join(a["name"] + ("" if a.get("required") else "?") for a in p["arguments"])
        table.add_row(p["name"], p["server"], args, _first_line(p["description"]))
    return table


def resources_table(resources: Sequence[Shape], templates: Sequence[Shape]) -> Table:
    table = Table(title=f"{len(resources)} resources, {len(templates)} templates")
    for column in ("kind", "uri", "server", "name", "mime type"):
        table.add_column(column, overflow="fold")
    for r in resources:
        table.add_row("resource", r["uri"], r["server"], r["name"], r["mime_type"] or "")
    for t in templates:
        table.add_row("template", t["uri_template"], t["server"], t["name"], t["mime_type"] or "")
    return table


def resource_lines(contents: Sequence[Shape]) -> list[str]:
    """A read resource's contents (the protocol's JSON): text as it is, binary by type and size."""
    return [
        c["text"] if "text" in c else f"[{c.get('mimeType') or 'binary'}, {len(c.get('blob', ''))} base64 chars]"
        for c in contents
    ]


def servers_table(servers: Sequence[Shape]) -> Table:
    table = Table(title=f"{len(servers)} servers")
    for column in ("server", "origin", "state", "transport", "target", "version", "tools", "error"):
        table.add_column(column, overflow="fold")
    for s in servers:
        table.add_row(
            s["name"],
            s["origin"],
            Text(s["state"], style=_STATE_STYLES.get(s["state"], "")),
            s["transport"],
            s["target"],
            s["protocol_version"] or "-",
            str(s["tools"]),
            Text(s["error"] or "", style="red"),
        )
    return table


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def surface_line(surface: Shape) -> str:
    """`catalog: N tools (~T tokens); LLM surface ...` from the `surface` block of `status --json`."""
    from mcpstation.catalog.tokens import surface_line as line

    return line(
        catalog_tools=surface["without_search"]["tools"],
        catalog_tokens=surface["without_search"]["tokens"],
        surface_tools=surface["tools"],
        surface_tokens=surface["tokens"],
        tool_search=surface["search"],
        code_mode=bool(surface.get("code", False)),
    )
