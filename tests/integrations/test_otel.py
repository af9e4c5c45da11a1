"""OpenTelemetry: spans and metrics per the MCP semantic conventions, against real servers, read
back through the OpenTelemetry SDK's in-memory exporter and metric reader.

The `mcp` SDK's own spans (its dispatcher's wire span, each server's SERVER span) come from the
global tracer provider, so the tests install one SDK provider for the process, recording only
while a test here runs.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from _traced_server import build_traced_server
from mcp.client import Client
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpstation import Caller, Face, Role, Station, StationConfig
from mcpstation.api import ApiServer, bind_socket, bound_port
from mcpstation.config import parse_config
from mcpstation.config.models import InProcessServerSpec, StdioServerSpec
from mcpstation.connection import ConnectionState
from mcpstation.gateway import build_gateway_server
from mcpstation.integrations import otel
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import CALLER_SCOPE_KEY
from mcpstation.testing.demo_server import build_demo_server

pytestmark = pytest.mark.anyio

TIMEOUT_S = 60.0  # a station, a subprocess or an HTTP server start on a loaded 2-core machine
TRACED_SERVER = Path(__file__).with_name("_traced_server.py")
ADMIN = Caller("tester", Role.ADMIN, Face.GATEWAY)
CLIENT_INFO = {"name": "raw-http-client", "version": "1"}


class _Switch(SpanProcessor):
    """Hands finished spans to `inner` only while switched on (the provider outlives this module)."""

    def __init__(self, inner: SpanProcessor) -> None:
        self.inner = inner
        self.on = False

    def on_end(self, span: ReadableSpan) -> None:
        if self.on:
            self.inner.on_end(span)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


_EXPORTER = InMemorySpanExporter()
_SWITCH = _Switch(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture(scope="module")
def global_provider() -> TracerProvider:
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        provider = current
    else:
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(_SWITCH)
    return provider


@pytest.fixture
def spans(global_provider: TracerProvider) -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    _SWITCH.on = True
    try:
        yield _EXPORTER
    finally:
        _SWITCH.on = False
        _EXPORTER.clear()


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meters(reader: InMemoryMetricReader) -> Iterator[MeterProvider]:
    provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    try:
        yield provider
    finally:
        provider.shutdown()


def ours(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.instrumentation_scope.name == otel.SCOPE]


def named(exporter: InMemorySpanExporter, name: str, kind: SpanKind = SpanKind.CLIENT) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name and s.kind is kind]


def points(reader: InMemoryMetricReader, name: str) -> list[HistogramDataPoint]:
    data = reader.get_metrics_data()
    found: list[HistogramDataPoint] = []
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    assert metric.unit == "s"
                    found.extend(p for p in metric.data.data_points if isinstance(p, HistogramDataPoint))
    return found


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def hex_ids(traceparent: str) -> tuple[int, int]:
    """(trace id, parent span id) of a W3C `traceparent`."""
    _, trace_id, span_id, _ = traceparent.split("-")
    return int(trace_id, 16), int(span_id, 16)


@asynccontextmanager
async def instrumented(*specs: Any, meters: MeterProvider) -> AsyncIterator[Station]:
    station = Station(StationConfig(servers=specs))
    telemetry = otel.instrument(station, meter_provider=meters)
    try:
        with anyio.fail_after(TIMEOUT_S):
            async with station:
                yield station
    finally:
        telemetry.close()


def demo() -> InProcessServerSpec:
    return InProcessServerSpec(name="demo", server=build_demo_server())


def traced() -> InProcessServerSpec:
    return InProcessServerSpec(name="traced", server=build_traced_server())


def tool(station: Station, server: str, name: str) -> str:
    [entry] = [t for t in station.tools if (t.server, t.tool) == (server, name)]
    return entry.name


# -- the client side ------------------------------------------------------------------------------------


async def test_a_tool_call_is_one_client_span_and_one_measurement_named_by_the_conventions(
    spans: InMemorySpanExporter, reader: InMemoryMetricReader, meters: MeterProvider
):
    async with instrumented(demo(), meters=meters) as station:
        result = await station.call_tool(tool(station, "demo", "add"), {"a": 2, "b": 3})
        version = station.connection("demo").protocol_version
    assert result.ok and result.text == "5"

    [span] = ours(spans)
    assert (span.name, span.kind, span.status.status_code) == ("tools/call add", SpanKind.CLIENT, StatusCode.UNSET)
    assert version is not None and dict(span.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "mcp.protocol.version": version,
        otel.SERVER_ATTRIBUTE: "demo",
        otel.TRANSPORT_ATTRIBUTE: "inprocess",
        otel.OUTCOME_ATTRIBUTE: "ok",
        "mcpstation.public_name": result.name,
        "mcpstation.caller.face": "library",
    }
    [point] = points(reader, "mcp.client.operation.duration")
    assert point.count == 1 and point.sum > 0
    assert tuple(point.explicit_bounds) == otel.DURATION_BUCKETS_S
    assert dict(point.attributes) == {
        key: value for key, value in (span.attributes or {}).items() if not key.startswith("mcpstation.")
    } | {otel.SERVER_ATTRIBUTE: "demo", otel.TRANSPORT_ATTRIBUTE: "inprocess", otel.OUTCOME_ATTRIBUTE: "ok"}


async def test_every_request_kind_gets_its_method_and_target_and_uris_stay_off_names_and_metrics(
    spans: InMemorySpanExporter, reader: InMemoryMetricReader, meters: MeterProvider
):
    async with instrumented(demo(), meters=meters) as station:
        [greet] = [p.name for p in station.prompts if p.prompt == "greet"]
        assert (await station.get_prompt(greet, {"name": "Ada"})).ok
        assert (await station.read_resource("demo://readme")).ok
        assert (await station.read_resource("demo://notes/1")).ok
        completed = await station.complete(
            types.PromptReference(type="ref/prompt", name=greet), {"name": "style", "value": "f"}
        )
        assert completed.ok

    by_name = {(s.name, (s.attributes or {}).get("mcp.resource.uri")): s for s in ours(spans)}
    assert set(by_name) == {
        ("prompts/get greet", None),
        ("resources/read", "demo://readme"),
        ("resources/read", "demo://notes/1"),
        ("completion/complete greet", None),
    }
    assert (by_name["prompts/get greet", None].attributes or {})["gen_ai.prompt.name"] == "greet"
    assert (by_name["completion/complete greet", None].attributes or {})["mcp.method.name"] == "completion/complete"
    assert all((s.attributes or {})[otel.OUTCOME_ATTRIBUTE] == "ok" for s in by_name.values())

    measured = {(p.attributes["mcp.method.name"], p.count) for p in points(reader, "mcp.client.operation.duration")}
    assert measured == {("prompts/get", 1), ("resources/read", 2), ("completion/complete", 1)}
    assert not any("mcp.resource.uri" in p.attributes for p in points(reader, "mcp.client.operation.duration"))


async def test_failures_carry_error_type_an_error_status_and_the_typed_outcome(
    spans: InMemorySpanExporter, reader: InMemoryMetricReader, meters: MeterProvider
):
    async with instrumented(demo(), meters=meters) as station:
        failed = await station.call_tool(tool(station, "demo", "fail"), {"message": "no"})
        timed_out = await station.call_tool(tool(station, "demo", "slow"), {"seconds": 600}, timeout_s=0.5)
        [greet] = [p.name for p in station.prompts if p.prompt == "greet"]
        rejected = await station.get_prompt(greet, {})  # `name` is required: the server answers an error
    assert (failed.outcome, timed_out.outcome, rejected.outcome) == (
        Outcome.TOOL_ERROR,
        Outcome.TIMEOUT,
        Outcome.REMOTE_ERROR,
    )
    assert rejected.upstream_error is not None
    code = str(rejected.upstream_error.code)

    by_name = {s.name: s for s in ours(spans)}
    tool_error, timeout, remote = by_name["tools/call fail"], by_name["tools/call slow"], by_name["prompts/get greet"]
    assert all(s.status.status_code is StatusCode.ERROR for s in (tool_error, timeout, remote))
    assert [(s.attributes or {})["error.type"] for s in (tool_error, timeout, remote)] == [
        "tool_error",
        "timeout",
        code,
    ]
    assert [(s.attributes or {})[otel.OUTCOME_ATTRIBUTE] for s in (tool_error, timeout, remote)] == [
        "tool_error",
        "timeout",
        "remote_error",
    ]
    assert tool_error.status.description is None  # the tool's own text is its output, not exported
    assert remote.status.description == rejected.upstream_error.message
    assert (remote.attributes or {})["rpc.response.status_code"] == code

    errors = {p.attributes["error.type"]: p.count for p in points(reader, "mcp.client.operation.duration")}
    assert errors == {"tool_error": 1, "timeout": 1, code: 1}


# -- trace context to the servers ------------------------------------------------------------------------


async def test_an_in_process_server_receives_our_trace_in_meta_through_the_sdk_wire_span(
    spans: InMemorySpanExporter, reader: InMemoryMetricReader, meters: MeterProvider
):
    async with instrumented(traced(), meters=meters) as station:
        with trace.get_tracer("agent").start_as_current_span("agent turn") as turn:
            result = await station.call_tool(tool(station, "traced", "trace_context"), {})
    seen = result.structured
    assert result.ok and seen is not None and seen["traceparent"] is not None

    [client] = named(spans, "tools/call trace_context")
    [wire] = named(spans, "MCP send tools/call trace_context")  # the SDK dispatcher's own span
    [server_span] = named(spans, "tools/call trace_context", SpanKind.SERVER)
    assert client.instrumentation_scope.name == otel.SCOPE and parent_of(client) == turn.get_span_context().span_id
    assert parent_of(wire) == client.context.span_id
    trace_id, parent_id = hex_ids(seen["traceparent"])
    assert trace_id == turn.get_span_context().trace_id == client.context.trace_id
    assert parent_id == wire.context.span_id  # injected by the SDK from the context we made current
    assert parent_of(server_span) == wire.context.span_id
    assert int(seen["current_span_id"], 16) == server_span.context.span_id


async def test_a_layer_with_a_no_op_tracer_still_passes_the_callers_trace_to_the_server(
    spans: InMemorySpanExporter, meters: MeterProvider
):
    station = Station(StationConfig(servers=(traced(),)))
    telemetry = otel.instrument(station, tracer_provider=trace.NoOpTracerProvider(), meter_provider=meters)
    try:
        with anyio.fail_after(TIMEOUT_S):
            async with station:
                with trace.get_tracer("agent").start_as_current_span("agent turn") as turn:
                    result = await station.call_tool(tool(station, "traced", "trace_context"), {})
    finally:
        telemetry.close()
    seen = result.structured
    assert result.ok and seen is not None
    [wire] = named(spans, "MCP send tools/call trace_context")
    assert ours(spans) == [] and parent_of(wire) == turn.get_span_context().span_id
    assert hex_ids(seen["traceparent"]) == (turn.get_span_context().trace_id, wire.context.span_id)


async def test_trace_context_crosses_a_stdio_pipe_and_a_dying_session_is_measured_as_lost(
    spans: InMemorySpanExporter, reader: InMemoryMetricReader, meters: MeterProvider
):
    spec = StdioServerSpec(name="piped", command=sys.executable, args=(str(TRACED_SERVER),))
    async with instrumented(spec, meters=meters) as station:
        result = await station.call_tool(tool(station, "piped", "trace_context"), {})
        connection = station.connection("piped")
        assert connection.pid is not None
        os.kill(connection.pid, signal.SIGKILL)
        with anyio.fail_after(TIMEOUT_S):
            await connection.wait_for_state(ConnectionState.BACKING_OFF, ConnectionState.FAILED)
    seen = result.structured
    assert result.ok and seen is not None

    [client] = named(spans, "tools/call trace_context")
    [wire] = named(spans, "MCP send tools/call trace_context")
    assert parent_of(wire) == client.context.span_id
    assert hex_ids(seen["traceparent"]) == (client.context.trace_id, wire.context.span_id)
    attributes = client.attributes or {}
    assert (attributes["network.transport"], attributes[otel.TRANSPORT_ATTRIBUTE]) == ("pipe", "stdio")
    # The child records no spans of its own (no provider there): its current span is the remote parent.
    assert int(seen["current_span_id"], 16) == wire.context.span_id

    sessions = points(reader, "mcp.client.session.duration")
    assert sessions and sessions[0].attributes.get("error.type") == "connection_lost"
    assert sessions[0].attributes[otel.SERVER_ATTRIBUTE] == "piped"


# -- the gateway ----------------------------------------------------------------------------------------------


async def test_the_gateway_joins_a_downstream_trace_from_meta_and_measures_its_messages(
    spans: InMemorySpanExporter, reader: InMemoryMetricReader, meters: MeterProvider
):
    async with instrumented(traced(), meters=meters) as station:
        name = tool(station, "traced", "trace_context")

        def instrument(server: Any, station: Station) -> None:
            otel.instrument_gateway(server, station, meter_provider=meters)

        gateway = build_gateway_server(station, local_caller=ADMIN, instrument=instrument)
        with anyio.fail_after(TIMEOUT_S):
            async with Client(gateway, mode="legacy") as downstream:
                with trace.get_tracer("agent").start_as_current_span("agent turn") as turn:
                    answer = await downstream.call_tool(name, {})
                    with pytest.raises(MCPError) as made_up:  # a tool nobody has: a protocol error
                        await downstream.call_tool("no_such_tool", {})
    assert not answer.is_error and made_up.value.error.code == types.INVALID_PARAMS
    seen = answer.structured_content
    assert seen is not None

    [gateway_span] = named(spans, f"tools/call {name}", SpanKind.SERVER)
    [client] = named(spans, "tools/call trace_context")
    upstream = named(spans, "tools/call trace_context", SpanKind.SERVER)
    assert gateway_span.context.trace_id == turn.get_span_context().trace_id
    assert parent_of(client) == gateway_span.context.span_id
    assert [s.context.trace_id for s in upstream] == [turn.get_span_context().trace_id]
    assert hex_ids(seen["traceparent"])[0] == turn.get_span_context().trace_id
    assert (gateway_span.attributes or {})[otel.OUTCOME_ATTRIBUTE] == "ok"

    measured = {
        (p.attributes["mcp.method.name"], p.attributes.get("gen_ai.tool.name"), p.attributes.get("error.type"))
        for p in points(reader, "mcp.server.operation.duration")
    }
    assert ("tools/call", name, None) in measured
    made_up_code = str(types.INVALID_PARAMS)
    assert ("tools/call", otel.OTHER, made_up_code) in measured  # a made-up name is never an attribute value
    assert ("initialize", None, None) in measured


class _AsCaller:
    """ASGI: every request runs as one caller (the access guard's job in the real app)."""

    def __init__(self, app: ASGIApp, caller: Caller) -> None:
        self.app = app
        self.caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app({**scope, CALLER_SCOPE_KEY: self.caller}, receive, send)


@asynccontextmanager
async def served_over_http(station: Station, meters: MeterProvider) -> AsyncIterator[str]:
    def instrument(server: Any, station: Station) -> None:
        otel.instrument_gateway(server, station, meter_provider=meters)

    server = build_gateway_server(station, instrument=instrument)
    security = TransportSecuritySettings(allowed_hosts=["127.0.0.1:*"], allowed_origins=["http://127.0.0.1:*"])
    app = server.streamable_http_app(json_response=True, transport_security=security)
    app.add_middleware(_AsCaller, caller=ADMIN)
    sock = bind_socket("127.0.0.1", 0)
    http = ApiServer(app)
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(http.serve, [sock])
            with anyio.fail_after(TIMEOUT_S):
                await http.wait_started()
            try:
                yield f"http://127.0.0.1:{bound_port(sock)}/mcp"
            finally:
                http.should_exit = True


async def rpc(client: httpx2.AsyncClient, url: str, body: dict[str, Any], **headers: str) -> httpx2.Response:
    response = await client.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})
    assert response.status_code in (200, 202), response.text
    return response


async def test_an_http_traceparent_header_parents_the_gateway_span_unless_meta_brings_one(
    spans: InMemorySpanExporter, reader: InMemoryMetricReader, meters: MeterProvider
):
    from_header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    from_meta = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    async with instrumented(demo(), meters=meters) as station:
        name = tool(station, "demo", "add")
        async with served_over_http(station, meters) as url, httpx2.AsyncClient(timeout=TIMEOUT_S) as http:
            hello = await rpc(http, url, {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO},
            })  # fmt: skip
            session = {"mcp-session-id": hello.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            await rpc(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": name, "arguments": {"a": 1, "b": 2}},
            }
            by_header = await rpc(http, url, call, traceparent=from_header, **session)
            call["id"] = 3
            call["params"] = {**call["params"], "_meta": {"traceparent": from_meta}}  # type: ignore[dict-item]
            by_meta = await rpc(http, url, call, traceparent=from_header, **session)
    assert [r.json()["result"]["content"][0]["text"] for r in (by_header, by_meta)] == ["3", "3"]

    served = sorted(named(spans, f"tools/call {name}", SpanKind.SERVER), key=lambda s: s.start_time or 0)
    assert [(s.context.trace_id, parent_of(s)) for s in served] == [hex_ids(from_header), hex_ids(from_meta)]
    attributes = served[0].attributes or {}
    assert attributes["network.transport"] == "tcp" and attributes["network.protocol.name"] == "http"
    assert attributes["mcp.session.id"] == session["mcp-session-id"]
    assert attributes["client.address"] == "127.0.0.1"
    clients = [s for s in ours(spans) if s.name == "tools/call add"]
    assert sorted(parent_of(s) or 0 for s in clients) == sorted(s.context.span_id for s in served)


# -- only when asked ------------------------------------------------------------------------------------------


async def test_a_station_carries_no_telemetry_unless_its_config_or_its_owner_asks(
    spans: InMemorySpanExporter, reader: InMemoryMetricReader, meters: MeterProvider
):
    quiet = Station(StationConfig(servers=(demo(),)))
    assert otel.instrument_from_config(quiet) is None
    async with quiet:
        assert (await quiet.call_tool(tool(quiet, "demo", "add"), {"a": 1, "b": 1})).ok
    assert ours(spans) == []

    config = parse_config("[telemetry]\nenabled = true\n", fmt="toml")
    loud = Station(config.model_copy(update={"servers": (demo(),)}))
    telemetry = otel.instrument_from_config(loud)
    assert telemetry is not None
    try:
        async with loud:
            assert (await loud.call_tool(tool(loud, "demo", "add"), {"a": 1, "b": 1})).ok
    finally:
        telemetry.close()
    assert [s.name for s in ours(spans)] == ["tools/call add"]
