"""Dynamic servers: add, change, remove, secrets kept but never listed, and every change audited
in its own transaction."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from pydantic import SecretStr

from mcpstation.config.models import StdioServerSpec, StreamableHttpServerSpec
from mcpstation.errors import StoreError, UsageError
from mcpstation.store import REDACTED, Store
from mcpstation.store._schema import dynamic_servers, management_audit

pytestmark = pytest.mark.anyio


def _stdio(name: str = "github", **overrides: Any) -> StdioServerSpec:
    fields: dict[str, Any] = {
        "name": name,
        "command": "npx",
        "args": ("-y", "@modelcontextprotocol/server-github"),
        "env": {"GITHUB_TOKEN": SecretStr("ghp_secret_value")},
    }
    return StdioServerSpec(**(fields | overrides))


def _http(name: str = "search") -> StreamableHttpServerSpec:
    return StreamableHttpServerSpec(
        name=name,
        url="https://user:pw@search.example.com/mcp",
        headers={"X-Api-Key": SecretStr("key-123")},
        bearer_token=SecretStr("bearer-456"),
    )


async def _count(store: Store, table: sa.Table) -> int:
    async with store.engine.connect() as connection:
        return int((await connection.execute(sa.select(sa.func.count()).select_from(table))).scalar_one())


async def test_added_server_is_listed_with_secrets_redacted(store: Store) -> None:
    added = await store.add_dynamic_server(_stdio(), actor="alice")

    assert added.status == "active" and added.enabled and added.added_by == "alice"
    listed = await store.list_dynamic_servers()
    assert [server.name for server in listed] == ["github"]
    spec = listed[0].spec
    assert isinstance(spec, StdioServerSpec)
    assert spec.args == ("-y", "@modelcontextprotocol/server-github")
    assert spec.env["GITHUB_TOKEN"].get_secret_value() == REDACTED
    assert added.spec.env["GITHUB_TOKEN"].get_secret_value() == REDACTED
    assert listed[0].added_at.tzinfo is not None


async def test_secrets_are_kept_to_reconnect(store: Store) -> None:
    await store.add_dynamic_server(_stdio(), actor="alice")
    await store.add_dynamic_server(_http(), actor="alice")

    revealed = await store.get_dynamic_server("search", reveal_secrets=True)
    assert revealed is not None
    spec = revealed.spec
    assert isinstance(spec, StreamableHttpServerSpec)
    assert spec.headers["X-Api-Key"].get_secret_value() == "key-123"
    assert spec.bearer_token is not None and spec.bearer_token.get_secret_value() == "bearer-456"
    specs = {spec.name: spec for spec in await store.connectable_specs()}
    github = specs["github"]
    assert isinstance(github, StdioServerSpec)
    assert github.env["GITHUB_TOKEN"].get_secret_value() == "ghp_secret_value"


async def test_audit_detail_names_the_target_never_a_secret(store: Store) -> None:
    await store.add_dynamic_server(_stdio(), actor="alice")
    await store.add_dynamic_server(_http(), actor="bob")

    actions = {action.server: action for action in await store.list_actions()}
    assert actions["github"].action == "add"
    assert actions["github"].detail == {
        "transport": "stdio",
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-github"],
        "env_keys": ["GITHUB_TOKEN"],
    }
    assert actions["search"].detail["url"] == "https://user:***@search.example.com/mcp"
    text = repr(await store.list_actions())
    for secret in ("ghp_secret_value", "key-123", "bearer-456", ":pw@"):
        assert secret not in text


async def test_duplicate_add_raises_and_leaves_no_extra_row(store: Store) -> None:
    await store.add_dynamic_server(_stdio(), actor="alice")

    with pytest.raises(StoreError, match="already exists"):
        await store.add_dynamic_server(_stdio(command="uvx"), actor="mallory")

    assert await _count(store, dynamic_servers) == 1
    assert await _count(store, management_audit) == 1
    kept = await store.get_dynamic_server("github", reveal_secrets=True)
    assert kept is not None and isinstance(kept.spec, StdioServerSpec) and kept.spec.command == "npx"


async def test_exception_mid_transaction_rolls_back_the_change(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing_audit(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("audit write failed")

    monkeypatch.setattr(store, "_write_action", failing_audit)
    with pytest.raises(RuntimeError, match="audit write failed"):
        await store.add_dynamic_server(_stdio(), actor="alice")

    assert await store.get_dynamic_server("github") is None
    assert await _count(store, dynamic_servers) == 0
    assert await _count(store, management_audit) == 0


async def test_failed_update_leaves_the_server_as_it_was(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    await store.add_dynamic_server(_stdio(), actor="alice")

    async def failing_audit(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("audit write failed")

    monkeypatch.setattr(store, "_write_action", failing_audit)
    with pytest.raises(RuntimeError):
        await store.update_dynamic_server("github", enabled=False, actor="alice")
    monkeypatch.undo()

    server = await store.get_dynamic_server("github")
    assert server is not None and server.enabled
    assert [action.action for action in await store.list_actions()] == ["add"]


async def test_remove_of_a_missing_server_raises_and_writes_nothing(store: Store) -> None:
    with pytest.raises(StoreError, match="no dynamic server named 'ghost'"):
        await store.remove_dynamic_server("ghost", actor="alice")

    assert await _count(store, management_audit) == 0


async def test_update_of_a_missing_server_raises(store: Store) -> None:
    with pytest.raises(StoreError, match="no dynamic server"):
        await store.update_dynamic_server("ghost", enabled=False, actor="alice")
    assert await _count(store, management_audit) == 0


async def test_remove_deletes_and_audits(store: Store) -> None:
    await store.add_dynamic_server(_stdio(), actor="alice")

    removed = await store.remove_dynamic_server("github", actor="bob")

    assert removed.name == "github"
    assert await store.list_dynamic_servers() == ()
    latest = (await store.list_actions(limit=1))[0]
    assert (latest.action, latest.actor, latest.server) == ("remove", "bob", "github")


async def test_disable_and_enable_are_audited_and_change_what_connects(store: Store) -> None:
    await store.add_dynamic_server(_stdio(), actor="alice")

    disabled = await store.update_dynamic_server("github", enabled=False, actor="bob")

    assert not disabled.enabled and not disabled.spec.enabled
    assert await store.connectable_specs() == ()
    await store.update_dynamic_server("github", enabled=True, actor="bob")
    assert [spec.name for spec in await store.connectable_specs()] == ["github"]
    assert [action.action for action in await store.list_actions("github")] == ["enable", "disable", "add"]


async def test_pending_server_connects_only_once_approved(store: Store) -> None:
    pending = await store.add_dynamic_server(_stdio(), actor="llm", status="pending_approval")
    assert not pending.is_connectable
    assert await store.connectable_specs() == ()

    approved = await store.update_dynamic_server("github", status="active", note="checked the package", actor="admin")

    assert approved.is_connectable and approved.note == "checked the package"
    latest = (await store.list_actions(limit=1))[0]
    assert latest.action == "approve" and latest.detail == {"note": "checked the package"}


async def test_no_change_writes_no_audit_row(store: Store) -> None:
    await store.add_dynamic_server(_stdio(), actor="alice")

    await store.update_dynamic_server("github", enabled=True, actor="alice")
    await store.update_dynamic_server("github", spec=_stdio(), actor="alice")

    assert await _count(store, management_audit) == 1


async def test_spec_update_keeps_secrets_sent_back_redacted(store: Store) -> None:
    await store.add_dynamic_server(_stdio(), actor="alice")
    listed = await store.get_dynamic_server("github")
    assert listed is not None
    edited = listed.spec.model_copy(update={"args": ("-y", "server-github@2")})

    await store.update_dynamic_server("github", spec=edited, actor="alice")

    revealed = await store.get_dynamic_server("github", reveal_secrets=True)
    assert revealed is not None and isinstance(revealed.spec, StdioServerSpec)
    assert revealed.spec.args == ("-y", "server-github@2")
    assert revealed.spec.env["GITHUB_TOKEN"].get_secret_value() == "ghp_secret_value"
    assert (await store.list_actions(limit=1))[0].action == "update"


async def test_spec_update_cannot_rename(store: Store) -> None:
    await store.add_dynamic_server(_stdio(), actor="alice")
    with pytest.raises(UsageError, match="rename"):
        await store.update_dynamic_server("github", spec=_stdio("other"), actor="alice")


async def test_a_change_needs_an_actor(store: Store) -> None:
    with pytest.raises(UsageError, match="actor"):
        await store.add_dynamic_server(_stdio(), actor="")
