"""`auth.upstream = "user-oauth"` is not built yet: such a server is refused with that reason, never
reached as nobody, whether it comes from the config, a reload or an agent adding it at run time.
A server reached as each user comes only from the config: an agent cannot add one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpstation import Station, StationConfig
from mcpstation.config.models import StreamableHttpServerSpec
from mcpstation.policy import Gate, Verdict, admit
from mcpstation.roster import Standing
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

# Nothing listens here: a server that were started would fail to connect, and be FAILED, not REFUSED.
URL = "http://127.0.0.1:9/mcp"


def entry(name: str, upstream: str) -> dict[str, Any]:
    return {"name": name, "transport": "streamable_http", "url": URL, "auth": {"upstream": upstream}}


async def test_a_user_oauth_server_is_refused_at_start_and_on_reload_with_what_is_missing() -> None:
    config = StationConfig(servers=(entry("wiki", "user-oauth"),), station={"startup_timeout_s": 5})
    async with Station(config) as station:
        held = station.roster.get("wiki")
        assert held is not None and held.standing is Standing.REFUSED
        assert "user-oauth is not supported yet" in (held.reason or "")
        assert "never reaches such a server as nobody" in (held.reason or "")
        assert station.pool.get("wiki") is None

        await station.reload(StationConfig(servers=(entry("docs", "user-oauth"),), station={"startup_timeout_s": 5}))
        held = station.roster.get("docs")
        assert held is not None and held.standing is Standing.REFUSED
        assert station.pool.get("docs") is None
        status = {s.name: s for s in station.status().servers}
        assert "user-oauth is not supported yet" in str(status["docs"])


async def test_an_agent_cannot_add_a_user_oauth_server(tmp_path: Path) -> None:
    spec = StreamableHttpServerSpec.model_validate(entry("wiki", "user-oauth"))
    admission = await admit(spec, StationConfig().policy)
    assert (admission.decision, admission.rule) == (Verdict.DENY, Gate.UNSUPPORTED)
    assert "user-oauth is not supported yet" in admission.reason
    async with await Store.open(data_dir=tmp_path) as store, Station(StationConfig(), store=store) as station:
        change = await station.add_server(entry("wiki", "user-oauth"))
        assert not change.ok
        assert "user-oauth is not supported yet" in str(change)


async def test_an_agent_cannot_add_a_token_exchange_server_that_would_receive_users_tokens() -> None:
    auth = {"upstream": "token-exchange", "issuer": "https://evil.example", "client_id": "x", "client_secret": "y"}
    spec = StreamableHttpServerSpec.model_validate({**entry("jira", "token-exchange"), "auth": auth})
    admission = await admit(spec, StationConfig().policy)
    assert (admission.decision, admission.rule) == (Verdict.DENY, Gate.PER_USER_FROM_CONFIG)
    assert "comes only from the config" in admission.reason
