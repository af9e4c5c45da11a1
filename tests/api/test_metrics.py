"""`/metrics`: every request kind counted by typed outcome in a registry of the station's own, and
served in the format the scraper asks for, against the real in-process demo server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcpstation import Role, Station, StationConfig
from mcpstation.api import ApiServer, bind_socket, bound_port, build_app
from mcpstation.api.metrics import LATENCY_BUCKETS_S, MetricsLayer, render_metrics
from mcpstation.config.models import InProcessServerSpec
from mcpstation.store import Store
from mcpstation.testing.demo_server import build_demo_server

pytestmark = pytest.mark.anyio

TIMEOUT_S = 60.0  # a station and an HTTP server start on a loaded 2-core machine
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition, keyed by name and labels (in any order)."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name, frozenset(sample.labels.items())] = sample.value
    return found


def value(found: Samples, name: str, **labels: str) -> float:
    return found[name, frozenset(labels.items())]


def demo(name: str = "demo") -> InProcessServerSpec:
    return InProcessServerSpec(name=name, server=build_demo_server(name))


def public(station: Station, tool: str) -> str:
    [entry] = [t for t in station.tools if t.tool == tool]
    return entry.name


@asynccontextmanager
async def measured(*specs: InProcessServerSpec) -> AsyncIterator[tuple[Station, MetricsLayer]]:
    station = Station(StationConfig(servers=specs))
    metrics = MetricsLayer()
    station.add_layer(metrics)
    with anyio.fail_after(TIMEOUT_S):
        async with station:
            yield station, metrics


async def test_every_request_kind_is_counted_by_its_typed_outcome():
    async with measured(demo()) as (station, metrics):
        for _ in range(2):
            assert (await station.call_tool(public(station, "add"), {"a": 1, "b": 2})).ok
        assert not (await station.call_tool(public(station, "fail"), {"message": "no"})).ok
        [greet] = [p.name for p in station.prompts if p.prompt == "greet"]
        assert (await station.get_prompt(greet, {"name": "Ada"})).ok
        assert (await station.read_resource("demo://readme")).ok
        assert (await station.read_resource("demo://notes/1")).ok
        ref = types.PromptReference(type="ref/prompt", name=greet)
        assert (await station.complete(ref, {"name": "style", "value": "f"})).ok
        found = samples(render_metrics(metrics, station))
        tools = len(station.catalog.tools)

    assert value(found, "mcpstation_tool_calls_total", server="demo", tool="add", outcome="ok") == 2
    assert value(found, "mcpstation_tool_calls_total", server="demo", tool="fail", outcome="tool_error") == 1
    assert value(found, "mcpstation_tool_errors_total", server="demo", tool="fail") == 1
    assert value(found, "mcpstation_tool_errors_total", server="demo", tool="add") == 0
    assert value(found, "mcpstation_tool_call_duration_seconds_count", server="demo", tool="add") == 2
    assert value(found, "mcpstation_tool_call_duration_seconds_sum", server="demo", tool="add") > 0
    last = repr(LATENCY_BUCKETS_S[-1])
    assert value(found, "mcpstation_tool_call_duration_seconds_bucket", server="demo", tool="add", le=last) == 2
    assert value(found, "mcpstation_tool_call_duration_seconds_bucket", server="demo", tool="add", le="+Inf") == 2

    requests = {
        (dict(labels)["kind"], dict(labels)["outcome"]): count
        for (name, labels), count in found.items()
        if name == "mcpstation_requests_total"
    }
    assert requests == {
        ("tools/call", "ok"): 2,
        ("tools/call", "tool_error"): 1,
        ("prompts/get", "ok"): 1,
        ("resources/read", "ok"): 2,
        ("completion/complete", "ok"): 1,
    }
    assert value(found, "mcpstation_request_duration_seconds_count", kind="resources/read", server="demo") == 2
    assert not any("uri" in dict(labels) for _, labels in found)  # resources by server, never by URI

    assert value(found, "mcpstation_servers", state="READY") == 1
    assert value(found, "mcpstation_catalog_entries", kind="tools") == tools
    assert value(found, "mcpstation_events_dropped_total") == 0
    assert value(found, "process_resident_memory_bytes") > 0


async def test_two_stations_in_one_process_never_mix_and_the_global_registry_stays_clean():
    async with measured(demo("alpha")) as (alpha, alpha_metrics), measured(demo("beta")) as (beta, beta_metrics):
        assert (await alpha.call_tool(public(alpha, "add"), {"a": 1, "b": 1})).ok
        alpha_found = samples(render_metrics(alpha_metrics, alpha))
        beta_found = samples(render_metrics(beta_metrics, beta))

    assert value(alpha_found, "mcpstation_tool_calls_total", server="alpha", tool="add", outcome="ok") == 1
    assert not [key for key in beta_found if key[0] == "mcpstation_tool_calls_total"]
    assert value(beta_found, "mcpstation_servers", state="READY") == 1
    global_names = {family.name for family in prometheus_client.REGISTRY.collect()}
    assert not any(name.startswith("mcpstation") for name in global_names)


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[tuple[Station, httpx2.AsyncClient]]:
    """The station's HTTP app on a real socket, and a client holding a user token."""
    async with await Store.open(data_dir=tmp_path) as store:
        token, _ = await store.create_token("scraper", Role.USER)
        sock = bind_socket("127.0.0.1", 0)
        port = bound_port(sock)
        with sock, anyio.fail_after(TIMEOUT_S):
            async with Station(StationConfig(servers=(demo(),)), store=store) as station:
                server = ApiServer(build_app(station, host="127.0.0.1", port=port, gateway=False))
                async with anyio.create_task_group() as tg:
                    tg.start_soon(server.serve, [sock])
                    await server.wait_started()
                    headers = {"Authorization": f"Bearer {token}"}
                    try:
                        async with httpx2.AsyncClient(
                            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=TIMEOUT_S
                        ) as client:
                            yield station, client
                    finally:
                        server.should_exit = True


async def test_the_endpoint_serves_the_stations_registry_as_text_or_openmetrics_as_asked(tmp_path: Path):
    async with served(tmp_path) as (station, client):
        assert (await station.call_tool(public(station, "add"), {"a": 2, "b": 2})).ok
        plain = await client.get("/metrics")
        open_metrics = await client.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})

    assert plain.status_code == 200 and plain.headers["content-type"].startswith("text/plain; version=0.0.4")
    found = samples(plain.text)
    # The API's own layer counts the station's library calls too: one pipeline for every face.
    assert value(found, "mcpstation_tool_calls_total", server="demo", tool="add", outcome="ok") == 1
    assert "# TYPE mcpstation_tool_call_duration_seconds histogram" in plain.text

    assert open_metrics.status_code == 200
    assert open_metrics.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    assert open_metrics.text.endswith("# EOF\n")
    assert 'mcpstation_tool_calls_total{outcome="ok",server="demo",tool="add"} 1.0' in open_metrics.text
