"""What telemetry costs a request: the station with no telemetry layer, with `TracingLayer` and nothing
configured (OpenTelemetry's default no-op providers), with it recording into SDK providers, and
with the Prometheus `MetricsLayer`; the raw SDK `Client` is the baseline.

    python bench/telemetry.py [--rounds R] [--calls N]

Part 1, the call path. Each side has its own tiny stdio server (bench/servers/tiny_server.py,
which answers in microseconds), so what differs is the client. Sides take turns in every round,
the order rotated, so drift on the machine hits all alike. Per side and round: N sequential
`echo` calls; client CPU per call (`time.process_time`, the figure least moved by other load: the
servers run in other processes) and wall time per call.

Part 2, the layer alone: each layer wrapped around a handler that answers at once, on a running
station (so the layer sees a real connection), 20,000 requests per side and round, interleaved
the same way: the layer's own CPU, free of I/O and of most of the machine's noise.

Reported: the minimum and the median over the rounds, and each side's extra over no layer, by
the minimum. The recording side gives only *our* layer SDK providers (a simple span processor
into an in-memory exporter, cleared every round, and an in-memory metric reader); the global
provider stays the default for every side, so the SDK's own wire spans stay non-recording alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
from harness import list_all_tools, station_config, tiny_params, tiny_spec
from mcp.client import Client
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpstation import Caller, Outcome, Station, ToolResult
from mcpstation.api.metrics import MetricsLayer
from mcpstation.catalog import AnyResult
from mcpstation.integrations import otel
from mcpstation.pipeline import Handler, Request, RequestKind

ARGUMENTS = {"message": "hi"}
WARMUP_CALLS = 100
LAYER_REQUESTS = 20_000
NO_LAYER = "station, no telemetry layer"
RECORDING = "station + TracingLayer, SDK providers recording"
SDK_ALONE = "OpenTelemetry SDK alone: one span + one record"

Samples = dict[str, list[float]]


class Recording:
    """SDK providers for our layer only, with an in-memory exporter to count what they recorded."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)


Sides = dict[str, Callable[[], Awaitable[Any]]]


async def interleaved(
    sides: Sides, rounds: int, calls: int, spans: InMemorySpanExporter, recording: frozenset[str]
) -> tuple[Samples, Samples]:
    """CPU and wall seconds per call of each side, per round; the order rotates each round."""
    cpu: Samples = {name: [] for name in sides}
    wall: Samples = {name: [] for name in sides}
    names = list(sides)
    for round_no in range(rounds):
        shift = round_no % len(names)
        for name in names[shift:] + names[:shift]:
            call = sides[name]
            spans.clear()
            cpu_started, wall_started = time.process_time(), time.perf_counter()
            for _ in range(calls):
                await call()
            wall[name].append((time.perf_counter() - wall_started) / calls)
            cpu[name].append((time.process_time() - cpu_started) / calls)
            recorded = len(spans.get_finished_spans())
            expected = calls if name in recording else 0
            assert recorded == expected, f"{name!r} recorded {recorded} spans, not {expected}"
    return cpu, wall


async def run(rounds: int, calls: int) -> None:
    recording = Recording()
    async with AsyncExitStack() as stack:
        raw = await stack.enter_async_context(Client(tiny_params()))
        await list_all_tools(raw)
        stations = {name: Station(station_config([tiny_spec(name)])) for name in ("off", "noop", "sdk", "prom")}
        otel.instrument(stations["noop"])
        otel.instrument(
            stations["sdk"], tracer_provider=recording.tracer_provider, meter_provider=recording.meter_provider
        )
        stations["prom"].add_layer(MetricsLayer())
        for station in stations.values():
            await stack.enter_async_context(station)

        def station_call(name: str) -> Callable[[], Awaitable[Any]]:
            station, tool = stations[name], f"mcp_{name}_echo"
            return lambda: station.call_tool(tool, ARGUMENTS)

        sides: dict[str, Callable[[], Awaitable[Any]]] = {
            "raw SDK Client (baseline)": lambda: raw.call_tool("echo", ARGUMENTS),
            NO_LAYER: station_call("off"),
            "station + TracingLayer, no provider (no-op)": station_call("noop"),
            RECORDING: station_call("sdk"),
            "station + MetricsLayer (prometheus_client)": station_call("prom"),
        }
        for call in sides.values():
            for _ in range(WARMUP_CALLS):
                await call()
        cpu, wall = await interleaved(sides, rounds, calls, recording.spans, frozenset({RECORDING}))
        report("part 1: the call path", cpu, wall, NO_LAYER, f"{calls} sequential calls x {rounds} rounds")

        alone = layers_alone(stations["noop"], recording)
        recorders = frozenset({"TracingLayer, SDK providers recording", SDK_ALONE})
        cpu, _ = await interleaved(alone, rounds, LAYER_REQUESTS, recording.spans, recorders)
        report("part 2: the layer alone", cpu, None, "no layer", f"{LAYER_REQUESTS:,} requests x {rounds} rounds")


def layers_alone(station: Station, recording: Recording) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Each layer around a handler that answers at once, for a request to `station`'s real connection."""
    server = next(iter(station.connections))
    answer = ToolResult(Outcome.OK, f"mcp_{server}_echo", server, "echo")
    request = Request(RequestKind.CALL_TOOL, answer.name, server, "echo", Caller.library(), ARGUMENTS)

    async def bottom(request: Request) -> AnyResult:
        return answer

    handlers: dict[str, Handler] = {
        "no layer": bottom,
        "TracingLayer, no provider (no-op)": otel.TracingLayer(station)(bottom),
        "TracingLayer, SDK providers recording": otel.TracingLayer(
            station, tracer_provider=recording.tracer_provider, meter_provider=recording.meter_provider
        )(bottom),
        "MetricsLayer (prometheus_client)": MetricsLayer()(bottom),
    }
    sides: dict[str, Callable[[], Awaitable[Any]]] = {
        name: (lambda handler=handler: handler(request)) for name, handler in handlers.items()
    }
    # What the recording side cannot go below: the SDK itself, one span and one measurement with
    # the same attributes, nothing of ours around them.
    attributes = otel.TracingLayer(station)._shape(request).attributes
    tracer = recording.tracer_provider.get_tracer("bench")
    histogram = recording.meter_provider.get_meter("bench").create_histogram("bench.duration")

    async def sdk_alone() -> None:
        tracer.start_span("tools/call echo", attributes=attributes).end()
        histogram.record(0.001, attributes)

    sides[SDK_ALONE] = sdk_alone
    return sides


def report(title: str, cpu: Samples, wall: Samples | None, base: str, what: str) -> None:
    print(f"\n{title}: per request, {what}; min | median; extra over {base!r} by the min")
    header = f"  {'side':<50} {'client CPU (us)':>22} {'extra':>9} {'(us)':>7}"
    print(header + (f"   {'wall (us)':>18} {'extra':>9}" if wall is not None else ""))
    for name in cpu:
        c_min, c_med = min(cpu[name]), statistics.median(cpu[name])
        c_base = min(cpu[base])
        extra = f"{c_min / c_base - 1:+9.1%} {(c_min - c_base) * 1e6:+7.1f}"
        line = f"  {name:<50} {c_min * 1e6:9.1f} | {c_med * 1e6:9.1f} {extra}"
        if wall is not None:
            w_min, w_med = min(wall[name]), statistics.median(wall[name])
            line += f"   {w_min * 1e6:7.1f} | {w_med * 1e6:7.1f} {w_min / min(wall[base]) - 1:+9.1%}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    anyio.run(run, args.rounds, args.calls)


if __name__ == "__main__":
    main()
