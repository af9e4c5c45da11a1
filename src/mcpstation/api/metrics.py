"""Prometheus metrics of one station: a pipeline layer counting every request by kind, server and
typed outcome (tool calls by tool too), with latency; the station's servers, catalog and event
losses read at scrape time; exposition by `prometheus_client`, in the format the scraper asks for.

```python
metrics = MetricsLayer()
station.add_layer(metrics)
body, content_type = exposition(metrics, station, accept=request.headers.get("accept"))
```

Each layer has its own `CollectorRegistry`, never the process-global one, so two stations in one
process never mix. Labels come from resolved catalog entries only (a request for a name nobody
has is answered before the layers), so their number is bounded by the catalog; resources are
counted by server, not by URI.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import anyio
from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, choose_encoder, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mcpstation.catalog import AnyResult
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Handler, Request, RequestKind
from mcpstation.station import Station

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""What a scraper that asks for nothing in particular gets: the text format 0.0.4."""

LATENCY_BUCKETS_S: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class MetricsLayer:
    """A pipeline layer (`station.add_layer(layer)`) recording every request in its own `registry`.

    A request that raises instead of answering (a bug below) is not counted: it has no outcome.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._requests = Counter(
            "mcpstation_requests",
            "Requests of every kind, by kind (the MCP method), server and outcome.",
            ("kind", "server", "outcome"),
            registry=self.registry,
        )
        self._request_latency = Histogram(
            "mcpstation_request_duration_seconds",
            "Request latency in seconds, by kind and server.",
            ("kind", "server"),
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self._tool_calls = Counter(
            "mcpstation_tool_calls",
            "Tool calls by server, tool and outcome.",
            ("server", "tool", "outcome"),
            registry=self.registry,
        )
        self._tool_errors = Counter(
            "mcpstation_tool_errors",
            "Tool calls that failed (outcome other than ok), by server and tool.",
            ("server", "tool"),
            registry=self.registry,
        )
        self._tool_latency = Histogram(
            "mcpstation_tool_call_duration_seconds",
            "Tool call latency in seconds, by server and tool.",
            ("server", "tool"),
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        ProcessCollector(registry=self.registry)  # this process's CPU, memory and open files
        self._series: dict[tuple[RequestKind, str, str, Outcome], _Series] = {}

    def __call__(self, handler: Handler) -> Handler:
        async def measured(request: Request) -> AnyResult:
            started = time.perf_counter()
            try:
                result = await handler(request)
            except anyio.get_cancelled_exc_class():
                self.observe(request, Outcome.CANCELLED, time.perf_counter() - started)
                raise
            self.observe(request, result.outcome, time.perf_counter() - started)
            return result

        return measured

    def observe(self, request: Request, outcome: Outcome, duration_s: float) -> None:
        """Count one answered request."""
        key = (request.kind, request.server, request.target if request.kind is RequestKind.CALL_TOOL else "", outcome)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = self._bind(request, outcome)
        for counter in series.counters:
            counter.inc()
        for histogram in series.histograms:
            histogram.observe(duration_s)

    def _bind(self, request: Request, outcome: Outcome) -> _Series:
        kind, server = request.kind.value, request.server
        counters = [self._requests.labels(kind, server, outcome.value)]
        histograms = [self._request_latency.labels(kind, server)]
        if request.kind is RequestKind.CALL_TOOL:
            tool = request.target
            counters.append(self._tool_calls.labels(server, tool, outcome.value))
            errors = self._tool_errors.labels(server, tool)  # present (at 0) from a tool's first call on
            if not outcome.ok:
                counters.append(errors)
            histograms.append(self._tool_latency.labels(server, tool))
        return _Series(tuple(counters), tuple(histograms))


@dataclass(frozen=True, slots=True)
class _Series:
    """The labelled series one kind of answer counts into, bound once (the catalog bounds them)."""

    counters: tuple[Counter, ...]
    histograms: tuple[Histogram, ...]


class _StationState(Collector):
    """What the station is now, read at each scrape: servers by state, catalog size, lost events."""

    def __init__(self, station: Station) -> None:
        self._station = station

    def collect(self) -> Iterable[Metric]:
        servers = GaugeMetricFamily("mcpstation_servers", "Servers by state.", labels=("state",))
        by_state: dict[str, int] = {}
        status = self._station.status()
        for server in status.servers:
            by_state[str(server.state)] = by_state.get(str(server.state), 0) + 1
        for state, count in sorted(by_state.items()):
            servers.add_metric((state,), count)
        families: list[Metric] = [servers]
        catalog = self._station.catalog
        entries = GaugeMetricFamily(
            "mcpstation_catalog_entries", "Entries in the merged catalog, by kind.", labels=("kind",)
        )
        for kind, found in (
            ("tools", catalog.tools),
            ("prompts", catalog.prompts),
            ("resources", catalog.resources),
            ("templates", catalog.templates),
        ):
            entries.add_metric((kind,), len(found))
        dropped = CounterMetricFamily(
            "mcpstation_events_dropped", "Events a slow subscriber lost.", value=self._station.events.dropped
        )
        families += [entries, dropped]
        surface = status.surface
        if surface is not None:
            tokens = GaugeMetricFamily(
                "mcpstation_tool_schema_tokens",
                "Estimated schema tokens of the LLM surface: every tool, with tool search, and with code mode when on.",
                labels=("surface",),
            )
            tokens.add_metric(("all",), surface.all_tokens)
            tokens.add_metric(("search",), surface.search_tokens)
            if surface.code_tokens is not None:
                tokens.add_metric(("code",), surface.code_tokens)
            families.append(tokens)
        return families


class _Scrape(Collector):
    """One scrape: the layer's registry, then the station's state."""

    def __init__(self, metrics: MetricsLayer, station: Station) -> None:
        self._parts: tuple[Collector, ...] = (metrics.registry, _StationState(station))

    def collect(self) -> Iterator[Metric]:
        for part in self._parts:
            yield from part.collect()


def exposition(metrics: MetricsLayer, station: Station, accept: str | None = None) -> tuple[bytes, str]:
    """The scrape's body and content type: OpenMetrics when `accept` asks for it, else text 0.0.4."""
    encode, content_type = choose_encoder(accept or "")
    return encode(_Scrape(metrics, station)), content_type


def render_metrics(metrics: MetricsLayer, station: Station) -> str:
    """The scrape in the text format 0.0.4."""
    return generate_latest(_Scrape(metrics, station)).decode()
