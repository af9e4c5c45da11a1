"""API tokens: shown once, stored only as a hash."""

from __future__ import annotations

from pathlib import Path

import aiosqlite
import pytest
import sqlalchemy as sa
from store_helpers import StoreTarget

from mcpstation.errors import StoreError, UsageError
from mcpstation.store import DATABASE_FILE_NAME, Store, _engine
from mcpstation.store._schema import METADATA

pytestmark = pytest.mark.anyio


async def test_created_token_verifies_and_notes_its_use(store: Store) -> None:
    token, record = await store.create_token("ci", "admin")

    assert token.startswith("mcps_") and len(token) > 40
    assert record.last_used_at is None
    verified = await store.verify_token(token)
    assert verified is not None
    assert (verified.id, verified.name, verified.role) == (record.id, "ci", "admin")
    assert verified.last_used_at is not None
    listed = await store.list_tokens()
    assert [(token.name, token.last_used_at) for token in listed] == [("ci", verified.last_used_at)]


async def test_unknown_and_revoked_tokens_do_not_verify(store: Store) -> None:
    assert not await store.has_tokens()
    token, _ = await store.create_token("laptop", "user")
    assert await store.has_tokens()

    assert await store.verify_token(token + "x") is None
    assert await store.verify_token("") is None
    await store.revoke_token("laptop", actor="admin")
    assert await store.verify_token(token) is None
    assert not await store.has_tokens()
    assert [action.action for action in await store.list_actions()] == ["revoke_token", "create_token"]


async def test_token_names_are_unique_and_roles_checked(store: Store) -> None:
    await store.create_token("ci", "user")
    with pytest.raises(StoreError, match="exists"):
        await store.create_token("ci", "admin")
    with pytest.raises(UsageError, match="role"):
        await store.create_token("other", "root")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="no API token"):
        await store.revoke_token("ghost", actor="admin")


async def test_only_the_hash_is_stored(store_target: StoreTarget) -> None:
    async with await store_target.open() as store:
        token, _ = await store.create_token("ci", "admin")
        await store.verify_token(token)
        async with store.engine.connect() as connection:
            rows = [
                repr(row)
                for table in METADATA.sorted_tables
                for row in (await connection.execute(sa.select(table))).all()
            ]
    assert any("'ci'" in row for row in rows)
    assert not any(token in row or token.removeprefix("mcps_") in row for row in rows)
    if store_target.data_dir is not None:  # SQLite: not in the file's bytes either
        files = sorted(path for path in store_target.data_dir.glob("mcpstation.db*") if path.is_file())
        stored = b"".join(path.read_bytes() for path in files)
        assert b"ci" in stored  # the bytes are readable: the name is there
        assert token.encode() not in stored
        assert token.removeprefix("mcps_").encode() not in stored


async def test_a_token_is_good_while_another_process_holds_the_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_engine, "SQLITE_BUSY_TIMEOUT_S", 0.2)  # how long the note of its use waits
    async with await Store.open(data_dir=tmp_path) as store:
        token, _ = await store.create_token("ci", "user")
        async with aiosqlite.connect(tmp_path / DATABASE_FILE_NAME) as other:
            await other.execute("BEGIN IMMEDIATE")  # another process writing, for longer than the busy timeout
            held = await store.verify_token(token)
            await other.rollback()
        assert held is not None and (held.name, held.last_used_at) == ("ci", None)  # good; its use not noted yet
        noted = await store.verify_token(token)
        assert noted is not None and noted.last_used_at is not None
