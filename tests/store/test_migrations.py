"""The schema: migrated to head at open, upgraded in place, and in step with the metadata."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from pydantic import SecretStr
from store_helpers import StoreTarget

from mcpstation.config.models import StdioServerSpec
from mcpstation.errors import StoreError, UsageError
from mcpstation.store import Store, default_data_dir
from mcpstation.store._engine import SQLITE_BUSY_TIMEOUT_S, WRITE_OPTION, create_engine
from mcpstation.store._location import database_url, sqlite_file
from mcpstation.store._migrate import alembic_config
from mcpstation.store._schema import METADATA, dynamic_servers
from mcpstation.store._specs import dump_spec

pytestmark = pytest.mark.anyio

OPEN_TIMEOUT_S = 120.0  # one interpreter importing the store and opening a database, on a loaded machine


def _head() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


async def test_open_migrates_to_head(store: Store) -> None:
    async with store.engine.connect() as connection:
        version = (await connection.execute(sa.text("SELECT version_num FROM alembic_version"))).scalar_one()

    assert version == _head() == "0009_user_grant_revoked_change"
    assert await store.schema_revision() == version


async def test_migrated_schema_matches_the_metadata(store: Store) -> None:
    def differences(connection: sa.Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, METADATA))

    async with store.engine.connect() as connection:
        assert await connection.run_sync(differences) == []


async def test_reopening_keeps_data_and_revision(store_target: StoreTarget) -> None:
    spec = StdioServerSpec(name="kept", command="uvx", env={"TOKEN": SecretStr("s3cret")})
    async with await store_target.open() as first:
        await first.add_dynamic_server(spec, actor="alice")
        token, _ = await first.create_token("ci", "user")

    async with await store_target.open() as second:
        kept = await second.get_dynamic_server("kept", reveal_secrets=True)
        assert kept is not None and kept.spec == spec
        assert await second.verify_token(token) is not None
        assert [action.action for action in await second.list_actions()] == ["create_token", "add"]
        assert await second.schema_revision() == _head()


async def _database_at(target: StoreTarget, revision: str) -> None:
    """Create `target`'s database as the release whose newest revision was `revision` left it."""
    url = database_url(target.url, data_dir=target.data_dir)
    file = sqlite_file(url)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, schema=target.schema)

    def upgrade(connection: sa.Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, revision)

    try:
        async with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            if target.schema is not None:
                await connection.execute(sa.text(f'CREATE SCHEMA IF NOT EXISTS "{target.schema}"'))
            await connection.run_sync(upgrade)
            assert (await connection.execute(sa.text("SELECT version_num FROM alembic_version"))).scalar() == revision
            # A dynamic server as that release wrote it (`dynamic_servers` is unchanged since 0001).
            spec = StdioServerSpec(name="old", command="uvx", env={"TOKEN": SecretStr("s3cret")})
            now = datetime.now(UTC)
            await connection.execute(
                sa.insert(dynamic_servers).values(
                    name="old",
                    spec=dump_spec(spec),
                    transport="stdio",
                    enabled=True,
                    status="active",
                    note=None,
                    added_by="alice",
                    added_at=now,
                    updated_at=now,
                )
            )
    finally:
        await engine.dispose()


async def test_a_database_of_the_first_release_is_upgraded_in_place(store_target: StoreTarget) -> None:
    await _database_at(store_target, "0001")

    async with await store_target.open() as store:
        assert await store.schema_revision() == _head() == "0009_user_grant_revoked_change"
        kept = await store.get_dynamic_server("old", reveal_secrets=True)
        assert kept is not None and kept.spec.env["TOKEN"].get_secret_value() == "s3cret"
        expires_at = datetime.now(UTC) + timedelta(hours=1)
        await store.set_oauth_tokens("old", "https://mcp.example/mcp", {"access_token": "a"}, expires_at)
        stored = await store.get_oauth("old")
        assert stored is not None and stored.tokens == {"access_token": "a"}
        assert stored.token_expires_at is not None and abs(stored.token_expires_at - expires_at) < timedelta(seconds=1)


async def test_database_from_a_newer_release_is_refused(store_target: StoreTarget) -> None:
    async with await store_target.open() as store, store.engine.begin() as connection:
        await connection.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))

    with pytest.raises(StoreError, match=r"revision '9999'.*newer release"):
        await store_target.open()


async def test_closed_store_refuses_use(store: Store) -> None:
    await store.aclose()
    await store.aclose()  # idempotent
    assert "closed" in repr(store)
    with pytest.raises(UsageError, match="closed"):
        await store.list_dynamic_servers()


async def test_default_database_is_created_owner_only_in_the_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / "data"
    async with await Store.open(data_dir=data_dir) as store:
        assert store.url.endswith("nested/data/mcpstation.db")

    mode = stat.S_IMODE((data_dir / "mcpstation.db").stat().st_mode)
    assert mode == 0o600


async def test_sqlite_url_is_accepted_without_a_driver(tmp_path: Path) -> None:
    async with await Store.open(f"sqlite:///{tmp_path / 'x.db'}") as store:
        assert store.url.startswith("sqlite+aiosqlite:///")
        assert await store.schema_revision() == _head()


async def test_unsupported_database_is_refused() -> None:
    with pytest.raises(StoreError, match="unsupported database 'mysql'"):
        await Store.open("mysql://root@localhost/test")


async def test_unreachable_postgres_is_a_store_error() -> None:
    with pytest.raises(StoreError) as raised:
        await Store.open("postgresql://nobody:hunter2@127.0.0.1:1/x")
    assert "cannot open the store at postgresql+asyncpg://nobody:***@127.0.0.1:1/x" in str(raised.value)
    assert "hunter2" not in str(raised.value)


async def test_schema_is_for_postgres_only(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="PostgreSQL only"):
        await Store.open(data_dir=tmp_path, schema="x")


def test_data_dir_follows_env_then_xdg_then_home(tmp_path: Path) -> None:
    assert default_data_dir({"MCPSTATION_DATA_DIR": str(tmp_path / "d")}) == tmp_path / "d"
    assert default_data_dir({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "mcpstation"
    assert default_data_dir({"XDG_DATA_HOME": "relative"}) == Path.home() / ".local/share/mcpstation"
    assert default_data_dir({}) == Path.home() / ".local/share/mcpstation"


async def test_concurrent_opens_of_a_new_database_both_succeed(store_target: StoreTarget) -> None:
    opened: list[Store] = []

    async def open_one() -> None:
        opened.append(await store_target.open())

    async with anyio.create_task_group() as group:
        group.start_soon(open_one)
        group.start_soon(open_one)
    try:
        assert [await store.schema_revision() for store in opened] == [_head(), _head()]
    finally:
        for store in opened:
            await store.aclose()


def test_the_head_read_from_the_files_is_alembics_head() -> None:
    from mcpstation.store._migrate import shipped_head

    assert shipped_head() == _head()


def test_opening_a_current_database_does_not_load_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'station.db'}"
    program = (
        "import sys, anyio\n"
        "from mcpstation.store import Store\n"
        "async def main():\n"
        f"    async with await Store.open({url!r}):\n"
        "        pass\n"
        "anyio.run(main)\n"
        "print('alembic' in sys.modules)\n"
    )
    first = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    again = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert (first.stdout.split(), again.stdout.split()) == (["True"], ["False"])  # migrated once, then only read


_OPEN_ONCE = """
import logging, sys, anyio
logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
if sys.argv[2] == "verbose":
    logging.getLogger("mcpstation").setLevel(logging.DEBUG)
from mcpstation.store import Store
async def main():
    async with await Store.open(sys.argv[1]):
        pass
anyio.run(main)
print("alembic" in sys.modules)
"""


def _open_in_a_process(url: str, mode: str = "quiet") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _OPEN_ONCE, url, mode], capture_output=True, text=True, timeout=OPEN_TIMEOUT_S
    )


def test_a_first_start_says_one_line_about_its_migration_and_alembic_nothing(tmp_path: Path) -> None:
    quiet = _open_in_a_process(f"sqlite:///{tmp_path / 'quiet.db'}")
    assert quiet.returncode == 0, quiet.stderr
    lines = quiet.stderr.splitlines()
    assert not [line for line in lines if line.startswith("alembic")], lines
    assert [line for line in lines if "migrated" in line] == [
        f"mcpstation.store._migrate INFO store at sqlite+aiosqlite:///{tmp_path / 'quiet.db'} "
        f"migrated from schema (empty) to {_head()}"
    ]
    verbose = _open_in_a_process(f"sqlite:///{tmp_path / 'verbose.db'}", "verbose")  # -v shows Alembic's steps
    assert any(
        line.startswith("alembic.runtime.migration INFO Running upgrade") for line in verbose.stderr.splitlines()
    )


def test_simultaneous_first_starts_migrate_once_and_all_open(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_ONCE, url, "quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    outputs = [process.communicate(timeout=OPEN_TIMEOUT_S) for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0, 0], [err for _, err in outputs]
    assert sorted(out.split()[-1] for out, _ in outputs) == ["False", "False", "False", "True"]  # one ran Alembic
    assert sum("migrated from schema (empty)" in err for _, err in outputs) == 1


async def test_opening_a_current_database_waits_for_no_writer(tmp_path: Path) -> None:
    target = StoreTarget("sqlite", None, tmp_path / "data", None)
    async with await target.open():
        pass
    writer = sqlite3.connect(tmp_path / "data" / "mcpstation.db", isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another station in the middle of a write
        with anyio.fail_after(SQLITE_BUSY_TIMEOUT_S / 2):  # a write lock at open would wait out the busy timeout
            async with await target.open() as store:
                assert await store.schema_revision() == _head()
    finally:
        writer.execute("ROLLBACK")
        writer.close()
