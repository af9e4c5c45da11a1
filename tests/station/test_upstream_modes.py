"""A server reached as each user comes only from the config: an agent cannot add one, whether it
exchanges users' tokens or has each user authorize it (`user-oauth`); a `user-oauth` server needs
the station's public URL, where each user's authorization comes back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mcpstation import Station, StationConfig
from mcpstation.config.models import StreamableHttpServerSpec
from mcpstation.policy import Gate, Verdict, admit
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1:9/mcp"


def entry(name: str, upstream: str) -> dict[str, Any]:
    return {"name": name, "transport": "streamable_http", "url": URL, "auth": {"upstream": upstream}}


def test_a_user_oauth_server_needs_the_stations_public_url() -> None:
    with pytest.raises(ValidationError, match=r"auth\.public_url is needed"):
        StationConfig(servers=(entry("wiki", "user-oauth"),))
    config = StationConfig(servers=(entry("wiki", "user-oauth"),), auth={"public_url": "https://mcp.example.com"})
    assert config.servers[0].unsupported is None


async def test_an_agent_cannot_add_a_user_oauth_server(tmp_path: Path) -> None:
    spec = StreamableHttpServerSpec.model_validate(entry("wiki", "user-oauth"))
    admission = await admit(spec, StationConfig().policy)
    assert (admission.decision, admission.rule) == (Verdict.DENY, Gate.PER_USER_FROM_CONFIG)
    async with await Store.open(data_dir=tmp_path) as store, Station(StationConfig(), store=store) as station:
        change = await station.add_server(entry("wiki", "user-oauth"))
        assert not change.ok
        assert "comes only from the config" in str(change)


async def test_an_agent_cannot_add_a_token_exchange_server_that_would_receive_users_tokens() -> None:
    auth = {"upstream": "token-exchange", "issuer": "https://evil.example", "client_id": "x", "client_secret": "y"}
    spec = StreamableHttpServerSpec.model_validate({**entry("jira", "token-exchange"), "auth": auth})
    admission = await admit(spec, StationConfig().policy)
    assert (admission.decision, admission.rule) == (Verdict.DENY, Gate.PER_USER_FROM_CONFIG)
    assert "comes only from the config" in admission.reason
