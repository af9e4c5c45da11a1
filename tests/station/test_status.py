"""`mcpstation.status`: what `status` says of each server, and why one that cannot answer cannot."""

from __future__ import annotations

import anyio
import pytest
from station_helpers import PY, START_TIMEOUT_S, inproc

from mcpstation import Station, StationConfig
from mcpstation.config import parse_config
from mcpstation.config.models import StreamableHttpServerSpec
from mcpstation.outcomes import Outcome
from mcpstation.status import ReloadReport, ServerState, describe_servers, redacted_target

pytestmark = pytest.mark.anyio

MISSING = "/nonexistent/mcpstation-status-test/server"


def config() -> StationConfig:
    servers = [
        inproc("calm"),
        {"name": "gone", "command": MISSING},
        inproc("off", enabled=False),
    ]
    return StationConfig(servers=servers, station={"max_consecutive_failures": 1})


async def test_each_server_has_its_state_and_the_reason_a_call_to_it_is_refused() -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config()) as station:
            states = {status.name: status for status in station.status().servers}
            call = await station.call_tool("mcp_gone_anything", {})
    assert states["calm"].state is ServerState.READY and states["calm"].tools > 0
    assert states["gone"].state is ServerState.FAILED and MISSING in (states["gone"].error or "")
    assert states["off"].state is ServerState.DISABLED and states["off"].tools == 0
    assert describe_servers(tuple(states.values())) == "1 disabled, 1 failed, 1 ready"
    assert call.outcome in (Outcome.NOT_FOUND, Outcome.UNAVAILABLE) and call.error


async def test_the_status_as_data_carries_what_the_table_shows() -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config()) as station:
            data = station.status().to_dict()
    servers = {server["name"]: server for server in data["servers"]}
    assert set(servers) == {"calm", "gone", "off"}
    assert servers["gone"]["state"] == "FAILED" and MISSING in servers["gone"]["error"]
    assert servers["calm"]["state"] == "READY"


def test_a_url_target_never_shows_its_userinfo() -> None:
    spec = StreamableHttpServerSpec(name="r", url="https://alice:s3cret@mcp.example/mcp")
    assert redacted_target(spec) == "https://***@mcp.example/mcp"
    assert "s3cret" not in redacted_target(spec)


def test_a_reload_report_says_what_changed_in_words_and_as_data() -> None:
    report = ReloadReport(added=("d",), removed=("c",), changed=("b",), unchanged=("a",))
    assert str(report) == "added d; removed c; restarted b"
    assert str(ReloadReport((), (), (), ("a",))) == "nothing changed"
    assert report.to_dict() == {"added": ["d"], "removed": ["c"], "changed": ["b"], "unchanged": ["a"]}


async def test_a_server_whose_variables_are_unset_is_held_with_why_and_the_others_answer() -> None:
    text = (
        f'[servers.demo]\ncommand = "{PY}"\nargs = ["-m", "mcpstation.testing.demo_server"]\n'
        '[servers.github]\ncommand = "npx"\nenv = { TOKEN = "${MCPSTATION_TEST_UNSET_TOKEN}" }\n'
    )
    config = parse_config(text, fmt="toml", source="mcpstation.toml", environ={})  # an editor's small environment
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            states = {status.name: status for status in station.status().servers}
            answered = await station.call_tool("mcp_demo_add", {"a": 1, "b": 2})
    assert states["demo"].state is ServerState.READY and answered.ok
    assert states["github"].state is ServerState.REFUSED
    assert "MCPSTATION_TEST_UNSET_TOKEN" in (states["github"].error or "")
