"""Prometheus metrics: a pipeline layer counting requests by server, target and typed outcome, with
latency, and the text exposition format (0.0.4) rendered by hand; the format is small and stable,
and a dependency would buy us nothing here.

```python
metrics = MetricsLayer()
station.add_layer(metrics)
text = render_metrics(metrics, station)
```
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

import anyio

from mcpstation.catalog import AnyResult
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Handler, Request, RequestKind
from mcpstation.station import Station

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS_S: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass(slots=True)
class _ToolStats:
    outcomes: dict[Outcome, int] = field(default_factory=dict)
    sum_s: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * len(LATENCY_BUCKETS_S))

    def observe(self, outcome: Outcome, duration_s: float) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        self.sum_s += duration_s
        index = bisect.bisect_left(LATENCY_BUCKETS_S, duration_s)
        if index < len(self.buckets):
            self.buckets[index] += 1

    @property
    def count(self) -> int:
        return sum(self.outcomes.values())

    @property
    def errors(self) -> int:
        return self.count - self.outcomes.get(Outcome.OK, 0)


class MetricsLayer:
    """A pipeline layer (`station.add_layer(layer)`) recording every tool call by `(server, tool)`.

    Labels come from resolved catalog entries only, so their number is bounded by the catalog.
    """

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str], _ToolStats] = {}

    def __call__(self, handler: Handler) -> Handler:
        async def measured(request: Request) -> AnyResult:
            if request.kind is not RequestKind.CALL_TOOL:
                return await handler(request)
            started = time.perf_counter()
            outcome = Outcome.CANCELLED
            try:
                result = await handler(request)
                outcome = result.outcome
                return result
            except anyio.get_cancelled_exc_class():
                raise
            finally:
                key = (request.server, request.target)
                self.calls.setdefault(key, _ToolStats()).observe(outcome, time.perf_counter() - started)

        return measured


def render_metrics(metrics: MetricsLayer, station: Station) -> str:
    """The exposition text: tool calls, errors and latency, servers by state, catalog size."""
    lines: list[str] = []
    calls = sorted(metrics.calls.items())
    _family(lines, "mcpstation_tool_calls_total", "counter", "Tool calls by server, tool and outcome.")
    for (server, tool), stats in calls:
        for outcome, value in sorted(stats.outcomes.items()):
            lines.append(_sample("mcpstation_tool_calls_total", value, server=server, tool=tool, outcome=outcome))
    _family(lines, "mcpstation_tool_errors_total", "counter", "Tool calls that failed (ok=false), by server and tool.")
    for (server, tool), stats in calls:
        lines.append(_sample("mcpstation_tool_errors_total", stats.errors, server=server, tool=tool))
    name = "mcpstation_tool_call_duration_seconds"
    _family(lines, name, "histogram", "Tool call latency in seconds, by server and tool.")
    for (server, tool), stats in calls:
        cumulative = 0
        for bound, count in zip(LATENCY_BUCKETS_S, stats.buckets, strict=True):
            cumulative += count
            lines.append(_sample(f"{name}_bucket", cumulative, server=server, tool=tool, le=_number(bound)))
        lines.append(_sample(f"{name}_bucket", stats.count, server=server, tool=tool, le="+Inf"))
        lines.append(_sample(f"{name}_sum", stats.sum_s, server=server, tool=tool))
        lines.append(_sample(f"{name}_count", stats.count, server=server, tool=tool))
    _family(lines, "mcpstation_servers", "gauge", "Servers by state.")
    by_state: dict[str, int] = {}
    for status in station.status().servers:
        by_state[status.state] = by_state.get(status.state, 0) + 1
    for state, count in sorted(by_state.items()):
        lines.append(_sample("mcpstation_servers", count, state=state))
    catalog = station.catalog
    _family(lines, "mcpstation_catalog_entries", "gauge", "Entries in the merged catalog, by kind.")
    for kind, entries in (
        ("tools", catalog.tools),
        ("prompts", catalog.prompts),
        ("resources", catalog.resources),
        ("templates", catalog.templates),
    ):
        lines.append(_sample("mcpstation_catalog_entries", len(entries), kind=kind))
    surface = station.status().surface
    if surface is not None:
        name = "mcpstation_tool_schema_tokens"
        _family(lines, name, "gauge", "Estimated schema tokens of the LLM surface: every tool, or with tool search.")
        lines.append(_sample(name, surface.all_tokens, surface="all"))
        lines.append(_sample(name, surface.search_tokens, surface="search"))
    _family(lines, "mcpstation_events_dropped_total", "counter", "Events a slow subscriber lost.")
    lines.append(_sample("mcpstation_events_dropped_total", station.events.dropped))
    return "\n".join(lines) + "\n"


def _family(lines: list[str], name: str, kind: str, help_text: str) -> None:
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} {kind}")


def _sample(name: str, value: float, **labels: str) -> str:
    if not labels:
        return f"{name} {_number(value)}"
    rendered = ",".join(f'{key}="{_escape(val)}"' for key, val in labels.items())
    return f"{name}{{{rendered}}} {_number(value)}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return repr(float(value))
