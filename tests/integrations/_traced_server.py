"""A tiny MCP server that reports the trace context each request arrived with.

    python tests/integrations/_traced_server.py        # serves stdio

`build_traced_server()` is the same server for the in-process tier. Its tool `trace_context`
answers, as structured content, the `traceparent` (and `tracestate`) it found in the request's
`_meta`, and the span context that was current while it ran (the SDK server span, when a
tracer provider records in this process).
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from opentelemetry import trace
from pydantic import BaseModel


class SeenContext(BaseModel):
    traceparent: str | None
    tracestate: str | None
    current_trace_id: str
    current_span_id: str


def build_traced_server(name: str = "traced") -> MCPServer:
    mcp = MCPServer(name)

    @mcp.tool()
    def trace_context(ctx: Context) -> SeenContext:
        """The trace context this request arrived with."""
        meta = ctx.request_context.meta or {}
        current = trace.get_current_span().get_span_context()
        traceparent, tracestate = meta.get("traceparent"), meta.get("tracestate")
        return SeenContext(
            traceparent=traceparent if isinstance(traceparent, str) else None,
            tracestate=tracestate if isinstance(tracestate, str) else None,
            current_trace_id=format(current.trace_id, "032x"),
            current_span_id=format(current.span_id, "016x"),
        )

    return mcp


if __name__ == "__main__":
    build_traced_server().run("stdio")
