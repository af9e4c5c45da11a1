"""OpenTelemetry for the station: spans and metrics per the GenAI semantic conventions for MCP.

```python
from mcpstation.integrations import otel

telemetry = otel.instrument(station)  # the global providers, or tracer_provider= / meter_provider=
server = build_gateway_server(station, instrument=otel.instrument_gateway)
```

The conventions are open-telemetry/semantic-conventions-genai `docs/gen-ai/mcp.md` (v0.1.0,
status Development). What the station adds:

- `TracingLayer`, a pipeline layer: a CLIENT span `{mcp.method.name} {target}` for every request
  of every kind, with the server's name in the station, protocol version, transport, our typed
  outcome (`mcpstation.outcome`) and, for failures, `error.type` and an ERROR status; and the
  `mcp.client.operation.duration` histogram.
- `mcp.client.session.duration` for each upstream session (READY until it ends).
- For the gateway (`instrument_gateway`): `mcp.server.operation.duration`; a downstream
  client's HTTP `traceparent` header parents the server span when its `_meta` carries none; the
  server span gains network and session attributes and the request's `mcpstation.outcome`.

What the `mcp` SDK already does, and this module neither repeats nor fights: its JSON-RPC
dispatcher opens a CLIENT span `MCP send {method} {target}` for every outbound request and
injects the current W3C trace context into `params._meta`; its low-level `Server` extracts it
and opens the SERVER span (`OpenTelemetryMiddleware`). Our span is current while the request is
sent, so the upstream server's span joins our trace: under the SDK's wire span when a global
provider records it, directly under ours when none does.

Nothing here runs unless asked: no layer is added to a station that was not instrumented, and
`instrument_from_config` honours `[telemetry] enabled`.

The tracing layer, the metrics layer and the gateway hook share the attribute tables below.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from opentelemetry import context, metrics, propagate, trace
from opentelemetry.metrics import Histogram, MeterProvider
from opentelemetry.trace import Span, SpanKind, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue
from pydantic import ValidationError

from mcpstation.catalog import AnyResult
from mcpstation.config.models import AnyServerSpec
from mcpstation.connection import ConnectionState
from mcpstation.events import StationEvent
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Handler, Request, RequestKind
from mcpstation.station import Station

__all__ = [
    "DURATION_BUCKETS_S",
    "OUTCOME_ATTRIBUTE",
    "SCOPE",
    "SERVER_ATTRIBUTE",
    "TRANSPORT_ATTRIBUTE",
    "Telemetry",
    "TracingLayer",
    "instrument",
    "instrument_from_config",
    "instrument_gateway",
]

SCOPE = "mcpstation"
"""The instrumentation scope of every span and instrument made here."""

DURATION_BUCKETS_S: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
"""The bucket boundaries the conventions give for all four MCP duration histograms."""

OUTCOME_ATTRIBUTE = "mcpstation.outcome"  # the request's typed `Outcome`
SERVER_ATTRIBUTE = "mcpstation.server"  # the upstream server's name in this station (its config key)
TRANSPORT_ATTRIBUTE = "mcpstation.transport"  # the config's transport: stdio, streamable_http, inprocess, ...

OTHER = "_OTHER"  # the conventions' fallback value, for a name a downstream client made up

Attributes = dict[str, AttributeValue]

_NETWORK: dict[str, Attributes] = {
    "stdio": {"network.transport": "pipe"},
    "streamable_http": {"network.transport": "tcp", "network.protocol.name": "http"},
    "sse": {"network.transport": "tcp", "network.protocol.name": "http"},
    "websocket": {"network.transport": "tcp", "network.protocol.name": "websocket"},
    "inprocess": {},  # memory streams: no network at all
}
_DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}
_SESSION_LOST = frozenset({ConnectionState.BACKING_OFF, ConnectionState.FAILED})


# -- the client side: one span and one measurement per request -----------------------------------------


@dataclass(slots=True)
class _Shape:
    """What every request of one kind to one target carries, worked out once: span name, attributes,
    and the measurement's attributes by outcome (bounded: the catalog's targets times the outcomes)."""

    server: Attributes  # the server's attributes it was built from; a new object when they change
    name: str
    attributes: Attributes
    measured: dict[Outcome, Attributes] = field(default_factory=dict)


class TracingLayer:
    """A pipeline layer (`station.add_layer(TracingLayer(station))`) tracing and timing every request.

    The span is current while the request is sent, so the SDK's `_meta` injection carries it (or
    the SDK's own wire span under it) to the server. Span and histogram attributes come from the
    resolved request and its connection; their number is bounded by the catalog (resource URIs,
    unbounded, are on spans only, as the conventions advise).
    """

    def __init__(
        self,
        station: Station,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self._connection_of = station.pool.get
        self._tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self._duration = meter.create_histogram(
            "mcp.client.operation.duration",
            unit="s",
            description="The duration of the MCP request as observed on the sender, until its answer.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS_S),
        )
        self._servers: dict[str, tuple[AnyServerSpec, str | None, Attributes]] = {}
        self._shapes: dict[tuple[RequestKind, str, str], _Shape] = {}

    def __call__(self, handler: Handler) -> Handler:
        async def traced(request: Request) -> AnyResult:
            shape = self._shape(request)
            started = time.perf_counter()
            span = self._tracer.start_span(shape.name, kind=SpanKind.CLIENT, attributes=shape.attributes)
            if not span.is_recording() and span.get_span_context() == trace.get_current_span().get_span_context():
                # A no-op tracer's span is the current context itself: nothing to make current or
                # annotate, only the measurement to take.
                return await self._measured(handler, request, shape, started, None)
            with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
                if span.is_recording():
                    span.set_attributes(_span_only(request))
                return await self._measured(handler, request, shape, started, span)

        return traced

    async def _measured(
        self, handler: Handler, request: Request, shape: _Shape, started: float, span: Span | None
    ) -> AnyResult:
        try:
            result = await handler(request)
        except anyio.get_cancelled_exc_class():
            self._finish(span, shape, started, Outcome.CANCELLED, None)
            raise
        except Exception as exc:  # a programming error below: recorded, then raised as itself
            if span is not None:
                span.record_exception(exc)
            self._finish(span, shape, started, None, None, error_type=type(exc).__qualname__)
            raise
        self._finish(span, shape, started, result.outcome, result)
        return result

    def server_attributes(self, server: str) -> Attributes:
        """What every span and measurement about `server` carries (its transport, address, protocol)."""
        connection = self._connection_of(server)
        if connection is None:
            return {SERVER_ATTRIBUTE: server}
        spec, version = connection.spec, connection.protocol_version
        cached = self._servers.get(server)
        if cached is None or cached[0] is not spec or cached[1] != version:
            cached = (spec, version, _server_attributes(spec, version))
            self._servers[server] = cached
        return cached[2]

    def _shape(self, request: Request) -> _Shape:
        kind = request.kind
        # Resource URIs are neither in names nor in measurements: one shape per server for them.
        key = (kind, request.server, "" if kind in _URI_KINDS else request.target)
        server = self.server_attributes(request.server)
        shape = self._shapes.get(key)
        if shape is None or shape.server is not server:
            attributes: Attributes = {**server, "mcp.method.name": kind.value}
            if kind is RequestKind.CALL_TOOL:
                attributes["gen_ai.operation.name"] = "execute_tool"
                attributes["gen_ai.tool.name"] = request.target
            elif kind is RequestKind.GET_PROMPT or (kind is RequestKind.COMPLETE and _completes_prompt(request)):
                attributes["gen_ai.prompt.name"] = request.target
            shape = _Shape(server, _span_name(request), attributes)
            self._shapes[key] = shape
        return shape

    def _finish(
        self,
        span: Span | None,
        shape: _Shape,
        started: float,
        outcome: Outcome | None,
        result: AnyResult | None,
        *,
        error_type: str | None = None,
    ) -> None:
        duration_s = time.perf_counter() - started
        if outcome is not None:
            served = _SERVED.get()
            if served is not None:
                served.outcome = outcome
        upstream = result.upstream_error if result is not None else None
        measured = shape.measured.get(outcome) if outcome is not None and upstream is None else None
        if measured is None:
            measured = dict(shape.attributes)
            if outcome is not None:
                measured[OUTCOME_ATTRIBUTE] = outcome.value
                if not outcome.ok:
                    measured["error.type"] = str(upstream.code) if upstream is not None else outcome.value
            if upstream is not None:
                measured["rpc.response.status_code"] = str(upstream.code)
            if error_type is not None:
                measured["error.type"] = error_type
            if outcome is not None and upstream is None:
                shape.measured[outcome] = measured
        if span is not None and span.is_recording():
            span.set_attributes({key: value for key, value in measured.items() if key not in shape.attributes})
            if "error.type" in measured:
                span.set_status(StatusCode.ERROR, _status_description(outcome, result))
        self._duration.record(duration_s, measured)


_URI_KINDS = frozenset({RequestKind.READ_RESOURCE, RequestKind.SUBSCRIBE, RequestKind.UNSUBSCRIBE})


def _span_name(request: Request) -> str:
    """`{mcp.method.name} {target}` for tools and prompts; the method alone where the only target
    would be a URI (high cardinality, so left out by default as the conventions say)."""
    kind = request.kind
    if kind is RequestKind.CALL_TOOL or kind is RequestKind.GET_PROMPT:
        return f"{kind.value} {request.target}"
    if kind is RequestKind.COMPLETE and _completes_prompt(request):
        return f"{kind.value} {request.target}"
    return kind.value


def _completes_prompt(request: Request) -> bool:
    return isinstance(request.ref, types.PromptReference)


def _span_only(request: Request) -> Attributes:
    """Attributes a span carries and a measurement must not (unbounded, or about the caller)."""
    attributes: Attributes = {"mcpstation.caller.face": request.caller.face.value}
    if request.kind in _URI_KINDS:
        attributes["mcp.resource.uri"] = request.target
    elif request.name != request.target:
        attributes["mcpstation.public_name"] = request.name
    return attributes


def _status_description(outcome: Outcome | None, result: AnyResult | None) -> str | None:
    """The JSON-RPC error's message when there is one; the station's own message for its refusals and
    failures; nothing for a tool's own error (its text is the tool's output, not ours to export)."""
    if result is None or outcome is Outcome.TOOL_ERROR:
        return None
    if result.upstream_error is not None:
        return result.upstream_error.message
    return result.error_on_record


def _server_attributes(spec: AnyServerSpec, protocol_version: str | None) -> Attributes:
    attributes: Attributes = {SERVER_ATTRIBUTE: spec.name, TRANSPORT_ATTRIBUTE: spec.transport}
    attributes.update(_NETWORK.get(spec.transport, {}))
    if protocol_version is not None:
        attributes["mcp.protocol.version"] = protocol_version
    url = getattr(spec, "url", None)
    if isinstance(url, str):
        parts = urlsplit(url)
        if parts.hostname:
            attributes["server.address"] = parts.hostname
            port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
            if port is not None:
                attributes["server.port"] = port
    return attributes


# -- sessions --------------------------------------------------------------------------------------------


class _SessionClock:
    """Times each upstream session from READY until it ends (`mcp.client.session.duration`).

    A session always leaves READY through STOPPING; the state after that says why it ended:
    BACKING_OFF or FAILED when the server died (`error.type = connection_lost`), STOPPED or
    STARTING when the station stopped or reconnected it.
    """

    def __init__(self, station: Station, layer: TracingLayer, histogram: Histogram) -> None:
        self._station = station
        self._layer = layer
        self._histogram = histogram
        self._open: dict[str, tuple[float, Attributes]] = {}  # READY since, what to record
        self._ending: dict[str, tuple[float, Attributes]] = {}  # how long it lasted, once it stopped being READY
        for name, connection in station.connections.items():
            if connection.state is ConnectionState.READY:
                self._open[name] = (time.perf_counter(), layer.server_attributes(name))

    def __call__(self, event: StationEvent) -> None:
        server = event.server
        if event.kind != "state" or server is None:
            return
        connection = self._station.pool.get(server)
        state = connection.state if connection is not None else ConnectionState.STOPPED
        if state is ConnectionState.STOPPING:
            opened = self._open.pop(server, None)
            if opened is not None:
                self._ending[server] = (time.perf_counter() - opened[0], opened[1])
            return
        self._end(server, lost=state in _SESSION_LOST)
        if state is ConnectionState.READY:
            self._open[server] = (time.perf_counter(), self._layer.server_attributes(server))

    def _end(self, server: str, *, lost: bool) -> None:
        ending = self._ending.pop(server, None)
        opened = self._open.pop(server, None)
        if ending is None and opened is not None:
            ending = (time.perf_counter() - opened[0], opened[1])
        if ending is None:
            return
        duration, attributes = ending
        if lost:
            attributes = {**attributes, "error.type": Outcome.CONNECTION_LOST.value}
        self._histogram.record(duration, attributes)


@dataclass
class Telemetry:
    """A station's telemetry: the layer in its request path and the clock of its upstream sessions."""

    layer: TracingLayer
    close: Callable[[], None]
    """Stop timing sessions (the layer stays in the request path)."""


def instrument(
    station: Station,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> Telemetry:
    """Trace and measure every request of `station` and time its upstream sessions.

    Without providers, the global ones (`opentelemetry.trace.set_tracer_provider`, or
    `opentelemetry-instrument`) are used, even when they are set after this call. `close()` on the
    result stops the session clock; the layer stays in the request path.
    """
    layer = TracingLayer(station, tracer_provider=tracer_provider, meter_provider=meter_provider)
    station.add_layer(layer)
    histogram = metrics.get_meter(SCOPE, meter_provider=meter_provider).create_histogram(
        "mcp.client.session.duration",
        unit="s",
        description="The duration of the MCP session as observed on the MCP client.",
        explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS_S),
    )
    unsubscribe = station.events.add_listener(_SessionClock(station, layer, histogram))
    return Telemetry(layer, unsubscribe)


def instrument_from_config(station: Station) -> Telemetry | None:
    """`instrument(station)` when its config says `[telemetry] enabled = true`, else nothing at all."""
    return instrument(station) if station.config.telemetry.enabled else None


# -- the gateway's own requests ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Served:
    """The outcome of the pipeline request a gateway message became, written by `TracingLayer`."""

    outcome: Outcome | None = None


_SERVED: ContextVar[_Served | None] = ContextVar("mcpstation gateway message", default=None)


def instrument_gateway(server: Server[Any], station: Station, *, meter_provider: MeterProvider | None = None) -> None:
    """Add what the SDK's server telemetry lacks to a gateway `server` serving `station`.

    The SDK's `OpenTelemetryMiddleware` (first in `server.middleware`) already opens a SERVER span
    per message, parented by the `_meta` trace context. Around it goes the HTTP `traceparent`
    header as parent when `_meta` has none; inside it, the server span's network and session
    attributes, its `mcpstation.outcome` (from the station's `TracingLayer`, when instrumented)
    and the `mcp.server.operation.duration` histogram.
    """
    histogram = metrics.get_meter(SCOPE, meter_provider=meter_provider).create_histogram(
        "mcp.server.operation.duration",
        unit="s",
        description="MCP request or notification duration as observed on the receiver, until its answer.",
        explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS_S),
    )
    server.middleware.insert(0, _HttpTraceParent())
    server.middleware.append(_ServedMessage(station, histogram))


class _HttpTraceParent:
    """Outermost: a downstream HTTP request's trace context becomes the ambient parent of the
    SDK's server span, unless the message's `_meta` brings its own (which the SDK prefers)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        headers = getattr(ctx.request, "headers", None)
        if not isinstance(headers, Mapping) or "traceparent" not in headers or _has_trace_context(ctx.meta):
            return await call_next(ctx)
        parent = propagate.extract(headers)
        if not trace.get_current_span(parent).get_span_context().is_valid:
            return await call_next(ctx)
        token = context.attach(parent)
        try:
            return await call_next(ctx)
        finally:
            context.detach(token)


class _ServedMessage:
    """Innermost, inside the SDK's server span: enrich it, and time the message."""

    def __init__(self, station: Station, histogram: Histogram) -> None:
        self._station = station
        self._histogram = histogram

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        span = trace.get_current_span()
        attributes = self._attributes(ctx)
        if span.is_recording():
            span.set_attributes({**_network_of(ctx), **_peer_of(ctx)})
        served = _Served()
        token = _SERVED.set(served)
        started = time.perf_counter()
        error_type: str | None = None
        status_code: str | None = None
        try:
            result = await call_next(ctx)
            if ctx.method == "tools/call" and _is_tool_error(result):
                error_type = Outcome.TOOL_ERROR.value
            return result
        except MCPError as exc:
            error_type = status_code = str(exc.error.code)
            raise
        except ValidationError:
            error_type = status_code = str(types.INVALID_PARAMS)
            raise
        except anyio.get_cancelled_exc_class():
            error_type = Outcome.CANCELLED.value
            raise
        except Exception as exc:  # a handler's bug: the SDK turns it into an error answer
            error_type = type(exc).__qualname__
            raise
        finally:
            _SERVED.reset(token)
            if served.outcome is not None:
                attributes[OUTCOME_ATTRIBUTE] = served.outcome.value
                if span.is_recording():
                    span.set_attribute(OUTCOME_ATTRIBUTE, served.outcome.value)
            if error_type is not None:
                attributes["error.type"] = error_type
            if status_code is not None:
                attributes["rpc.response.status_code"] = status_code
            self._histogram.record(time.perf_counter() - started, attributes)

    def _attributes(self, ctx: ServerRequestContext[Any, Any]) -> Attributes:
        attributes: Attributes = {"mcp.method.name": ctx.method, **_network_of(ctx)}
        if ctx.protocol_version:
            attributes["mcp.protocol.version"] = ctx.protocol_version
        name = ctx.params.get("name") if ctx.params else None
        catalog = self._station.catalog
        if ctx.method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
            # A downstream client may send any name: only the catalog's own become attribute values.
            attributes["gen_ai.tool.name"] = name if isinstance(name, str) and name in catalog.tools else OTHER
        elif ctx.method == "prompts/get":
            attributes["gen_ai.prompt.name"] = name if isinstance(name, str) and name in catalog.prompts else OTHER
        return attributes


def _has_trace_context(meta: Mapping[str, Any] | None) -> bool:
    if not meta or "traceparent" not in meta:
        return False
    return trace.get_current_span(propagate.extract(meta)).get_span_context().is_valid


def _network_of(ctx: ServerRequestContext[Any, Any]) -> Attributes:
    """HTTP when the message came with an HTTP request; otherwise a stdio gateway's pipe."""
    if ctx.request is not None and hasattr(ctx.request, "headers"):
        return {"network.transport": "tcp", "network.protocol.name": "http"}
    return {"network.transport": "pipe"}


def _peer_of(ctx: ServerRequestContext[Any, Any]) -> Attributes:
    """The HTTP session and client address, for the span only (one value per session and peer)."""
    attributes: Attributes = {}
    headers = getattr(ctx.request, "headers", None)
    if isinstance(headers, Mapping):
        session = headers.get("mcp-session-id")
        if isinstance(session, str):
            attributes["mcp.session.id"] = session
    client = getattr(ctx.request, "client", None)
    host, port = getattr(client, "host", None), getattr(client, "port", None)
    if isinstance(host, str):
        attributes["client.address"] = host
        if isinstance(port, int):
            attributes["client.port"] = port
    return attributes


def _is_tool_error(result: HandlerResult) -> bool:
    if isinstance(result, types.CallToolResult):
        return result.is_error is True
    return isinstance(result, dict) and result.get("isError") is True
