"""The store: dynamic servers, call and management audit, API tokens, tool pins, OAuth credentials
and the catalog cache in one database.

SQLite in the data directory by default, PostgreSQL when given its URL; the schema is migrated to
the newest revision every time a store opens. Every change runs in one transaction with its
`management_audit` row, so a change that fails leaves no trace and an audited change cannot be
lost. Every write that can race (first-use pins, tokens, dynamic servers, OAuth credentials) is
one `INSERT ... ON CONFLICT` or a row locked first, so two stations on one database never trip
over each other. Every durable change also appends a numbered row to the change log in the same
transaction, tagged with this store's replica id, so every running station can follow it.

One method per durable operation, each a transaction over the `_*.py` helpers beside it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import secrets
import socket
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from mcpstation.config.models import ServerSpec
from mcpstation.errors import StoreConflict, StoreError, UsageError
from mcpstation.file_lock import file_lock
from mcpstation.outcomes import Outcome
from mcpstation.store import _catalog, _changes, _migrate, _oauth, _pins, _user_oauth
from mcpstation.store._call_rows import call_values, sqlite_inserts
from mcpstation.store._engine import create_engine
from mcpstation.store._location import database_url, sqlite_file
from mcpstation.store._locks import ProcessLocks, lock_file, take_advisory_lock
from mcpstation.store._outage import StoreOutage
from mcpstation.store._schema import (
    NAME_LENGTH,
    api_tokens,
    call_audit,
    dynamic_servers,
    management_audit,
    oauth_credentials,
    tool_pins,
)
from mcpstation.store._signals import ChangeSignal, change_signal
from mcpstation.store._specs import audit_detail, dump_spec, keep_redacted_secrets, load_spec, redact
from mcpstation.store._sqlite_writer import SqliteWriter
from mcpstation.store._times import maybe_utc as _maybe_utc
from mcpstation.store._times import now as _now
from mcpstation.store._times import utc as _utc
from mcpstation.store._transactions import DISPOSE_TIMEOUT_S, Transactions, describe
from mcpstation.store._upsert import insert as _insert
from mcpstation.store.records import (
    ACTION_ADD,
    ACTION_APPROVE,
    ACTION_APPROVE_PIN,
    ACTION_CREATE_TOKEN,
    ACTION_DISABLE,
    ACTION_ENABLE,
    ACTION_NOTE,
    ACTION_REMOVE,
    ACTION_REVOKE_TOKEN,
    ACTION_SUSPEND,
    ACTION_UPDATE,
    CHANGE_OF_ACTION,
    ROLES,
    SERVER_STATUSES,
    ActionRecord,
    ApiToken,
    CachedCatalog,
    CallEntry,
    CallOutcome,
    CallRecord,
    ChangeKind,
    ChangeRecord,
    DynamicServer,
    OAuthCredentials,
    PinCheck,
    Role,
    ServerStatus,
    ToolPin,
    UserOAuth,
)

logger = logging.getLogger(__name__)

DEFAULT_LIST_LIMIT = 100
MIGRATE_ATTEMPTS = 5  # a new SQLite file opened by several processes at once: the losers retry
MIGRATE_RETRY_DELAY_S = 0.05  # first pause before a retry; it grows by this much each time
TOKEN_PREFIX = "mcps_"  # makes a leaked token recognisable to secret scanners
TOKEN_BYTES = 32
LAST_USED_RESOLUTION_S = 60.0  # `last_used_at` is rewritten at most this often per token
PG_NO_SUCH_DATABASE = "3D000"  # SQLSTATE invalid_catalog_name: the URL names a database that does not exist
PG_NOT_ALLOWED = "42501"  # SQLSTATE insufficient_privilege: e.g. no CREATE on schema public (PostgreSQL 15+)
CHANGE_READ_LIMIT = 500  # changes read from the log at most per `read_changes`
EXCLUSIVE_TIMEOUT_S = 60.0  # how long `exclusive` waits for another holder by default


class Store:
    """The station's database. Open with `await Store.open(...)`, close with `aclose()` or `async with`."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        label: str,
        keep_call_arguments: bool = False,
        replica_id: str | None = None,
    ) -> None:
        """Wrap an engine whose database is already migrated; use `Store.open` instead."""
        self._transactions = Transactions(engine, label=label)
        self._dialect = engine.dialect.name
        self._label = label
        self._keep_call_arguments = keep_call_arguments
        self._replica_id = replica_id or default_replica_id()
        self._file = sqlite_file(engine.url)
        # Audit batches on a SQLite file: one worker-thread hop per transaction, not one per step.
        self._writer = (
            SqliteWriter(engine.url, label=label, transactions=self._transactions) if self._file is not None else None
        )
        self._process_locks = ProcessLocks()

    @classmethod
    async def open(
        cls,
        url: str | None = None,
        *,
        data_dir: Path | None = None,
        schema: str | None = None,
        keep_call_arguments: bool = False,
        replica_id: str | None = None,
    ) -> Store:
        """Open (creating if needed) the database and migrate it to the newest schema.

        Args:
            url: `postgresql+asyncpg://...` (or `postgresql://...`) or `sqlite:///path`; None means
                SQLite in `data_dir`.
            data_dir: where the default SQLite file `mcpstation.db` lives; None means
                `$MCPSTATION_DATA_DIR`, `$XDG_DATA_HOME/mcpstation` or `~/.local/share/mcpstation`.
            schema: PostgreSQL only: the schema to keep the tables in (created if missing).
            keep_call_arguments: whether `record_call` stores the arguments themselves, not only
                their size and SHA-256.
            replica_id: who this store writes the change log as (so a station recognises its own
                changes); None means `host-pid-random`, unique per open.

        Raises:
            StoreError: the directory or database cannot be created or reached, a migration failed,
                or the database was written by a newer mcpstation.
            UsageError: `schema` given for SQLite, or a replica id too long.
        """
        target = database_url(url, data_dir=data_dir)
        label = target.render_as_string(hide_password=True)
        if schema is not None and target.get_backend_name() != "postgresql":
            raise UsageError("schema= applies to PostgreSQL only.")
        if replica_id is not None and not 0 < len(replica_id) <= NAME_LENGTH:
            raise UsageError(f"a replica id has 1 to {NAME_LENGTH} characters, not {len(replica_id)}.")
        file = sqlite_file(target)
        if file is not None:
            _create_database_file(file)
        engine = create_engine(target, schema=schema)
        try:
            for attempt in range(MIGRATE_ATTEMPTS):
                try:
                    await _migrate.upgrade(engine, schema=schema, label=label, database=file)
                    break
                except OperationalError as exc:
                    # Two processes creating one new SQLite file race on its first locks; the
                    # loser simply tries again (the winner's migration makes it a no-op).
                    if not _sqlite_busy(exc) or attempt == MIGRATE_ATTEMPTS - 1:
                        raise
                    await anyio.sleep(MIGRATE_RETRY_DELAY_S * (attempt + 1))
        except (SQLAlchemyError, OSError) as exc:
            await _dispose(engine)
            raise StoreError(f"cannot open the store at {label}: {describe(exc)}{_open_hint(exc)}") from exc
        except BaseException:
            await _dispose(engine)
            raise
        logger.info("store open at %s", label)
        return cls(engine, label=label, keep_call_arguments=keep_call_arguments, replica_id=replica_id)

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return self._label

    @property
    def database_file(self) -> Path | None:
        """The SQLite file of the store; None for PostgreSQL or SQLite in memory."""
        return self._file

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`."""
        return self._dialect

    @property
    def engine(self) -> AsyncEngine:
        """The engine underneath, for tests and maintenance tools."""
        return self._transactions.engine

    @property
    def is_closed(self) -> bool:
        return self._transactions.closed

    @property
    def replica_id(self) -> str:
        """The origin this store writes into the change log."""
        return self._replica_id

    @property
    def outage(self) -> StoreOutage | None:
        """Since when, and why, the database cannot be reached; None while it can (as far as this
        store knows: an outage opens with a failure to reach it and ends with a committed write)."""
        return self._transactions.outage

    async def probe(self) -> bool:
        """Whether the database takes a write now: a committed write that changes nothing (the
        schema revision set to itself), so a locked, full or read-only SQLite file fails it as a
        real write would. Ends the outage when it succeeds; never raises `StoreError`."""
        self._check_open()
        try:
            async with self._transaction(write=True, doing="checking that the store is back") as session:
                await session.execute(sa.text("UPDATE alembic_version SET version_num = version_num"))
        except StoreError:
            return False
        return True

    async def aclose(self) -> None:
        """Close the store: new calls are refused, running ones get a bounded grace to finish (then
        fail with `StoreError`), and every connection is closed. Afterwards the store holds no
        connection, no lock and no transaction, so the same database opens again at once.
        Idempotent; finishes its bounded work even when the caller is cancelled.
        """
        if self._transactions.closed:
            return
        if self._writer is not None:
            await self._writer.aclose()
        await self._transactions.aclose()
        logger.info("store closed at %s", self._label)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else "open"
        return f"<Store {self._label} {state}>"

    async def schema_revision(self) -> str | None:
        """The schema revision the database is at (the newest this release knows, once open)."""
        self._check_open()
        return await _migrate.current_revision(self.engine)

    # -- dynamic servers -------------------------------------------------------------------------

    async def add_dynamic_server(
        self, spec: ServerSpec, *, actor: str, status: ServerStatus = "active", note: str | None = None
    ) -> DynamicServer:
        """Add a server (secrets kept, to reconnect after a restart) and audit it as `add`.

        Raises:
            StoreError: a dynamic server with that name exists; nothing was written.
        """
        _check_actor(actor)
        _check_status(status)
        now = _now()
        stored = dump_spec(spec)
        insert = _insert(self._dialect, dynamic_servers).values(
            name=spec.name,
            spec=stored,
            transport=spec.transport,
            enabled=spec.enabled,
            status=status,
            note=note,
            added_by=actor,
            added_at=now,
            updated_at=now,
        )
        insert = insert.on_conflict_do_nothing(index_elements=[dynamic_servers.c.name])
        async with self._transaction(write=True, doing=f"adding dynamic server {spec.name!r}") as session:
            added = (await session.execute(insert.returning(dynamic_servers.c.name))).first()
            if added is None:
                raise StoreConflict(
                    f"a dynamic server named {spec.name!r} already exists. Remove it first, or choose another name.",
                    name=spec.name,
                )
            await self._write_action(session, ACTION_ADD, actor=actor, server=spec.name, detail=audit_detail(spec))
        logger.info("dynamic server %r added by %s (%s)", spec.name, actor, status)
        return DynamicServer(spec.name, redact(spec), spec.enabled, status, note, actor, now, now)

    async def update_dynamic_server(
        self,
        name: str,
        *,
        actor: str,
        enabled: bool | None = None,
        spec: ServerSpec | None = None,
        status: ServerStatus | None = None,
        note: str | None = None,
    ) -> DynamicServer:
        """Change a server; each kind of change is audited (`update`, `enable`/`disable`,
        `approve`/`suspend`, `note`) in the same transaction. No change writes nothing.

        A secret in `spec` that still reads `**********` (from a listing) keeps its stored value.
        `enabled` wins over `spec.enabled`.

        Raises:
            StoreError: no dynamic server has that name; nothing was written.
            UsageError: `spec` has another name (remove and add to rename).
        """
        _check_actor(actor)
        if status is not None:
            _check_status(status)
        if spec is not None and spec.name != name:
            raise UsageError(f"the spec is named {spec.name!r}, not {name!r}; remove and add to rename a server.")
        async with self._transaction(write=True, doing=f"updating dynamic server {name!r}") as session:
            row = await self._locked_server_row(session, name)
            old_spec = load_spec(row.spec, name=name)
            new_spec = old_spec if spec is None else keep_redacted_secrets(spec, old_spec)
            new_enabled = enabled if enabled is not None else (new_spec.enabled if spec is not None else row.enabled)
            new_spec = new_spec.model_copy(update={"enabled": new_enabled})
            new_status: ServerStatus = status if status is not None else row.status
            new_note = note if note is not None else row.note
            actions: list[tuple[str, dict[str, Any]]] = []
            if spec is not None and dump_spec(new_spec.model_copy(update={"enabled": row.enabled})) != row.spec:
                actions.append((ACTION_UPDATE, audit_detail(new_spec)))
            if new_enabled != row.enabled:
                actions.append((ACTION_ENABLE if new_enabled else ACTION_DISABLE, {}))
            note_detail = {"note": new_note} if new_note != row.note else {}
            if new_status != row.status:
                actions.append((ACTION_APPROVE if new_status == "active" else ACTION_SUSPEND, note_detail))
            elif note_detail:
                actions.append((ACTION_NOTE, note_detail))
            if not actions:
                return _server_record(row, reveal_secrets=False)
            now = _now()
            await session.execute(
                sa.update(dynamic_servers)
                .where(dynamic_servers.c.name == name)
                .values(
                    spec=dump_spec(new_spec),
                    transport=new_spec.transport,
                    enabled=new_enabled,
                    status=new_status,
                    note=new_note,
                    updated_at=now,
                )
            )
            for action, detail in actions:
                await self._write_action(session, action, actor=actor, server=name, detail=detail)
        logger.info("dynamic server %r changed by %s: %s", name, actor, ", ".join(action for action, _ in actions))
        return DynamicServer(
            name, redact(new_spec), new_enabled, new_status, new_note, row.added_by, _utc(row.added_at), now
        )

    async def remove_dynamic_server(self, name: str, *, actor: str) -> DynamicServer:
        """Delete a server and audit it as `remove`; returns what was removed (redacted).

        Raises:
            StoreError: no dynamic server has that name; nothing was written.
        """
        _check_actor(actor)
        delete = sa.delete(dynamic_servers).where(dynamic_servers.c.name == name).returning(*dynamic_servers.c)
        async with self._transaction(write=True, doing=f"removing dynamic server {name!r}") as session:
            row = (await session.execute(delete)).first()
            if row is None:
                raise StoreError(f"no dynamic server named {name!r}. `mcpstation servers list` shows the servers.")
            removed = _server_record(row, reveal_secrets=False)
            detail = audit_detail(removed.spec)
            await self._write_action(session, ACTION_REMOVE, actor=actor, server=name, detail=detail)
        logger.info("dynamic server %r removed by %s", name, actor)
        return removed

    async def get_dynamic_server(self, name: str, *, reveal_secrets: bool = False) -> DynamicServer | None:
        """One server, secrets redacted unless `reveal_secrets` (to connect it); None if absent."""
        async with self._transaction(doing=f"reading dynamic server {name!r}") as session:
            row = (await session.execute(sa.select(dynamic_servers).where(dynamic_servers.c.name == name))).first()
        return None if row is None else _server_record(row, reveal_secrets=reveal_secrets)

    async def list_dynamic_servers(self) -> tuple[DynamicServer, ...]:
        """Every dynamic server by name, secrets always redacted."""
        async with self._transaction(doing="listing dynamic servers") as session:
            rows = (await session.execute(sa.select(dynamic_servers).order_by(dynamic_servers.c.name))).all()
        return tuple(_server_record(row, reveal_secrets=False) for row in rows)

    async def connectable_specs(self) -> tuple[ServerSpec, ...]:
        """The full specs (secrets in clear) of every enabled, approved server: what to connect."""
        query = (
            sa.select(dynamic_servers)
            .where(dynamic_servers.c.enabled.is_(True), dynamic_servers.c.status == "active")
            .order_by(dynamic_servers.c.name)
        )
        async with self._transaction(doing="reading dynamic servers to connect") as session:
            rows = (await session.execute(query)).all()
        return tuple(_server_record(row, reveal_secrets=True).spec for row in rows)

    # -- audit -----------------------------------------------------------------------------------

    async def record_call(
        self,
        server: str,
        tool: str,
        *,
        outcome: CallOutcome,
        duration_s: float,
        caller: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        error: str | None = None,
        at: datetime | None = None,
        kind: str = "tools/call",
    ) -> CallRecord:
        """Audit one request (a tool call by default; `kind` is its MCP method): its arguments' size
        and SHA-256 (of canonical JSON), and the arguments themselves only if the store was opened
        with `keep_call_arguments`.
        """
        entry = CallEntry(server, tool, outcome, duration_s, caller, arguments, error, at, kind)
        (record,) = await self.record_calls((entry,))
        return record

    async def record_calls(self, entries: Sequence[CallEntry]) -> tuple[CallRecord, ...]:
        """Audit many requests in one transaction (each as `record_call` would): all are written or
        none is. The records come back in the order of `entries`, with the ids the database gave them.

        Raises:
            UsageError: an entry's outcome is not a `CallOutcome` (nothing is written).
            StoreError: the database refused or failed (nothing is written).
        """
        records = [_new_call_record(entry, keep_arguments=self._keep_call_arguments) for entry in entries]
        if not records:
            return ()
        ids = await self._insert_calls(records, returning=True)
        return tuple(dataclasses.replace(record, id=int(call_id)) for record, call_id in zip(records, ids, strict=True))

    async def write_calls(self, entries: Sequence[CallEntry]) -> None:
        """`record_calls` for a writer that needs no ids back (the audit trail): the rows go in one
        `executemany`, without `RETURNING`.

        Raises:
            UsageError: an entry's outcome is not a `CallOutcome` (nothing is written).
            StoreError: the database refused or failed (nothing is written).
        """
        if not entries:
            return
        if self._writer is None:
            records = [_new_call_record(entry, keep_arguments=self._keep_call_arguments) for entry in entries]
            await self._insert_calls(records, returning=False)
            return
        # SQLite file: plain values to the driver, no record object or parameter dictionary per row.
        inserts = sqlite_inserts(entries, keep_arguments=self._keep_call_arguments)
        self._check_open()
        await self._writer.execute_all(inserts, doing=_auditing(entries[0], len(entries)))

    async def _insert_calls(self, records: Sequence[CallRecord], *, returning: bool) -> Sequence[int]:
        """Insert `records` in one transaction; their ids in order when `returning`, else nothing."""
        doing = _auditing(records[0], len(records))
        rows = [_row_values(record) for record in records]
        if self._writer is not None and returning:
            self._check_open()
            return await self._writer.insert_returning_ids(_CALL_INSERT_RETURNING, rows, doing=doing)
        async with self._transaction(write=True, doing=doing) as session:
            if returning:
                return [int(i) for i in (await session.execute(_CALL_INSERT_RETURNING, rows)).scalars().all()]
            await session.execute(_CALL_INSERT, rows)
            return ()

    async def list_calls(
        self, server: str | None = None, since: datetime | None = None, limit: int = DEFAULT_LIST_LIMIT
    ) -> tuple[CallRecord, ...]:
        """Audited calls, newest first; of one `server`, and at or after `since`, when given."""
        query = sa.select(call_audit).order_by(call_audit.c.at.desc(), call_audit.c.id.desc()).limit(_limit(limit))
        if server is not None:
            query = query.where(call_audit.c.server == server)
        if since is not None:
            query = query.where(call_audit.c.at >= _utc(since))
        async with self._transaction(doing="listing audited calls") as session:
            rows = (await session.execute(query)).all()
        return tuple(_call_record(row) for row in rows)

    async def record_action(
        self,
        action: str,
        *,
        actor: str,
        server: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> ActionRecord:
        """Audit a management action the store does not perform itself (e.g. `reload`).

        `detail` is JSON naming what was acted on (a command line, a URL); never put secret
        values in it.
        """
        _check_actor(actor)
        if not action:
            raise UsageError("an audited action needs a name.")
        async with self._transaction(write=True, doing=f"auditing action {action!r}") as session:
            return await self._write_action(session, action, actor=actor, server=server, detail=dict(detail or {}))

    async def list_actions(
        self, server: str | None = None, since: datetime | None = None, limit: int = DEFAULT_LIST_LIMIT
    ) -> tuple[ActionRecord, ...]:
        """Audited management actions, newest first; of one `server`, and at or after `since`."""
        query = (
            sa.select(management_audit)
            .order_by(management_audit.c.at.desc(), management_audit.c.id.desc())
            .limit(_limit(limit))
        )
        if server is not None:
            query = query.where(management_audit.c.server == server)
        if since is not None:
            query = query.where(management_audit.c.at >= _utc(since))
        async with self._transaction(doing="listing audited actions") as session:
            rows = (await session.execute(query)).all()
        return tuple(_action_record(row) for row in rows)

    # -- API tokens ------------------------------------------------------------------------------

    async def create_token(self, name: str, role: Role, *, actor: str = "local") -> tuple[str, ApiToken]:
        """Make a token; returns it in clear this once, and keeps only its SHA-256.

        Raises:
            StoreError: a token with that name exists.
            UsageError: an empty name or an unknown role.
        """
        _check_actor(actor)
        if not name:
            raise UsageError("a token needs a name (what it is for).")
        if role not in ROLES:
            raise UsageError(f"role must be one of {', '.join(ROLES)}, not {role!r}.")
        token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
        now = _now()
        insert = (
            _insert(self._dialect, api_tokens)
            .values(name=name, role=role, token_sha256=_token_hash(token), created_at=now)
            .on_conflict_do_nothing()  # the name (or, never in practice, the hash) is taken
            .returning(api_tokens.c.id)
        )
        async with self._transaction(write=True, doing=f"creating API token {name!r}") as session:
            created = (await session.execute(insert)).scalar_one_or_none()
            if created is None:
                raise StoreConflict(
                    f"an API token named {name!r} exists. Revoke it first, or choose another name.", name=name
                )
            token_id = int(created)
            await self._write_action(
                session, ACTION_CREATE_TOKEN, actor=actor, server=None, detail={"name": name, "role": role}
            )
        logger.info("API token %r (%s) created by %s", name, role, actor)
        return token, ApiToken(token_id, name, role, now, None)

    async def verify_token(self, token: str) -> ApiToken | None:
        """The token's record if `token` is one the store issued (and not revoked), else None.

        Its `last_used_at` is rewritten at most once a minute. That write is a note, not part of
        the check: when it fails (another process kept the write lock past the busy timeout), the
        token is still good, the failure is logged, and the note waits for the next use.

        Raises:
            StoreError: the token could not be read.
        """
        digest = _token_hash(token)
        query = sa.select(api_tokens).where(api_tokens.c.token_sha256 == digest)
        if self._writer is not None:  # SQLite: checked on every API request, in one thread hop, not ten
            self._check_open()
            row = await self._writer.read(
                lambda connection: connection.execute(query).first(), doing="verifying an API token"
            )
        else:
            async with self._transaction(doing="verifying an API token") as session:
                row = (await session.execute(query)).first()
        if row is None:
            return None
        record = _token_record(row)
        now = _now()
        if record.last_used_at is not None and now - record.last_used_at < timedelta(seconds=LAST_USED_RESOLUTION_S):
            return record
        try:
            async with self._transaction(write=True, doing="noting an API token's use") as session:
                update = sa.update(api_tokens).where(api_tokens.c.id == record.id).values(last_used_at=now)
                await session.execute(update)
        except StoreError as exc:
            logger.warning("token %r is good, but its use could not be noted: %s", record.name, exc)
            return record
        return ApiToken(record.id, record.name, record.role, record.created_at, now)

    async def list_tokens(self) -> tuple[ApiToken, ...]:
        """Every token's public facts, by name."""
        async with self._transaction(doing="listing API tokens") as session:
            rows = (await session.execute(sa.select(api_tokens).order_by(api_tokens.c.name))).all()
        return tuple(_token_record(row) for row in rows)

    async def has_tokens(self) -> bool:
        """Whether any token exists (one indexed read, for a check made on every request)."""
        async with self._transaction(doing="looking for API tokens") as session:
            return bool((await session.execute(sa.select(sa.exists().select_from(api_tokens)))).scalar_one())

    async def revoke_token(self, name: str, *, actor: str) -> ApiToken:
        """Delete a token by name, audited as `revoke_token`.

        Raises:
            StoreError: no token has that name; nothing was written.
        """
        _check_actor(actor)
        delete = sa.delete(api_tokens).where(api_tokens.c.name == name).returning(*api_tokens.c)
        async with self._transaction(write=True, doing=f"revoking API token {name!r}") as session:
            row = (await session.execute(delete)).first()
            if row is None:
                raise StoreError(f"no API token named {name!r}.")
            await self._write_action(session, ACTION_REVOKE_TOKEN, actor=actor, server=None, detail={"name": name})
        return _token_record(row)

    # -- the change log --------------------------------------------------------------------------

    async def read_changes(self, after: int, limit: int = CHANGE_READ_LIMIT) -> tuple[ChangeRecord, ...]:
        """Changes numbered above `after`, oldest first, at most `limit`."""
        if self._writer is not None:  # polled 4 times a second on SQLite: one thread hop, not ten
            self._check_open()
            return await self._writer.read(
                lambda connection: _changes.read_changes_blocking(connection, after, _limit(limit)),
                doing="reading the change log",
            )
        async with self._transaction(doing="reading the change log") as session:
            return await _changes.read_changes(session, after, _limit(limit))

    async def last_change_id(self) -> int:
        """The newest change's number (0 when none was ever written): where a follower starts."""
        async with self._transaction(doing="reading the change log's end") as session:
            return await _changes.last_change_id(session)

    @asynccontextmanager
    async def change_signal(self) -> AsyncIterator[ChangeSignal]:
        """What wakes a follower of the log: a notification on PostgreSQL (one connection listens
        while this is open), the timeout alone on SQLite.

        Raises:
            StoreError: no connection could be had to listen on.
        """
        self._check_open()
        try:
            async with change_signal(self.engine) as signal:
                yield signal
        except (SQLAlchemyError, OSError) as exc:
            raise StoreError(f"listening for changes in the store at {self._label} failed: {describe(exc)}") from exc

    @asynccontextmanager
    async def exclusive(self, name: str, *, timeout_s: float = EXCLUSIVE_TIMEOUT_S) -> AsyncIterator[None]:
        """Hold the lock `name`, shared by every process on this store, for the block: work that
        must happen once across replicas (an OAuth refresh) runs inside it.

        A PostgreSQL advisory lock held by a transaction of its own, a file lock beside an SQLite
        file, a process-wide lock for SQLite in memory. A holder that dies releases it.

        Raises:
            StoreError: another holder kept it for `timeout_s`, or the database failed.
        """
        self._check_open()
        async with contextlib.AsyncExitStack() as held:
            try:
                if self._dialect == "postgresql":
                    session = await held.enter_async_context(self._transaction(doing=f"holding the lock {name!r}"))
                    await take_advisory_lock(session, name, timeout_s=timeout_s)
                elif self._file is not None:
                    await held.enter_async_context(file_lock(lock_file(self._file, name), timeout_s=timeout_s))
                else:
                    await held.enter_async_context(self._process_locks.hold(name, timeout_s=timeout_s))
            except (TimeoutError, OSError) as exc:
                raise StoreError(f"taking the lock {name!r} of the store at {self._label} failed: {exc}") from exc
            yield

    # -- tool pins -------------------------------------------------------------------------------

    async def get_pin(self, server: str, tool: str) -> ToolPin | None:
        """The pin of `(server, tool)`, None if the tool was never pinned."""
        async with self._transaction(doing=f"reading the pin of {server!r}/{tool!r}") as session:
            return await _pins.read_pin(session, server, tool)

    async def get_pins(self, server: str) -> dict[str, ToolPin]:
        """Every pin of `server` by tool name, in one query."""
        async with self._transaction(doing=f"reading the pins of {server!r}") as session:
            return await _pins.read_pins(session, server)

    async def set_pin(self, server: str, tool: str, fingerprint: str, *, approved: bool = False) -> ToolPin:
        """Pin `fingerprint` for `(server, tool)`.

        A new pin, or a different fingerprint, starts over: `first_seen` is now and the pin is
        unapproved unless `approved`. The same fingerprint again changes nothing (except approving
        it when `approved`). Safe to race: concurrent calls all succeed, one row results.
        """
        if not fingerprint:
            raise UsageError("a pin needs a fingerprint.")
        now = _now()
        pin = ToolPin(server, tool, fingerprint, now, now if approved else None)
        async with self._transaction(write=True, doing=f"pinning {server!r}/{tool!r}") as session:
            return await _pins.write_pin(session, self._dialect, pin, keep_approval=True)

    async def set_pins(
        self, server: str, fingerprints: Mapping[str, str], *, approve_new: bool = False
    ) -> dict[str, ToolPin]:
        """Pin many tools of one server in one transaction (a whole listing: `{tool: fingerprint}`).

        Per tool: no pin yet → pinned, approved when `approve_new` (trust on first use); a different
        fingerprint → replaced, unapproved, `first_seen` now; the same fingerprint → unchanged.
        Returns every pin of `server` as stored afterwards, by tool. Safe to race with other
        writers of the same tools, in this process or another: each row is one `INSERT ... ON
        CONFLICT`, so the first fingerprint in wins and nobody fails.
        """
        if not all(fingerprints.values()):
            raise UsageError(f"every pin needs a fingerprint (server {server!r}).")
        now = _now()
        doing = f"pinning {len(fingerprints)} tools of {server!r}"
        async with self._transaction(write=True, doing=doing) as session:
            await _pins.write_pins(session, self._dialect, server, fingerprints, now=now, approve_new=approve_new)
            return await _pins.read_pins(session, server)

    async def approve_pin(self, server: str, tool: str, *, actor: str, fingerprint: str | None = None) -> ToolPin:
        """A person approves the tool as pinned (or, given `fingerprint`, as it now is); audited
        as `approve_pin` in the same transaction.

        Raises:
            StoreError: the tool has no pin and no `fingerprint` was given.
        """
        _check_actor(actor)
        now = _now()
        async with self._transaction(write=True, doing=f"approving the pin of {server!r}/{tool!r}") as session:
            pin: ToolPin | None
            if fingerprint is None:
                pin = await _pins.approve_stored_pin(session, server, tool, now=now)
                if pin is None:
                    raise StoreError(f"tool {tool!r} of server {server!r} has no pin to approve.")
            else:
                wanted = ToolPin(server, tool, fingerprint, now, now)
                pin = await _pins.write_pin(session, self._dialect, wanted, keep_approval=False)
            await self._write_action(
                session,
                ACTION_APPROVE_PIN,
                actor=actor,
                server=server,
                detail={"tool": tool, "fingerprint": pin.fingerprint},
            )
        return pin

    async def list_pins(self, server: str | None = None) -> tuple[ToolPin, ...]:
        """Every pin (of one `server`, when given), by server and tool."""
        query = sa.select(tool_pins).order_by(tool_pins.c.server, tool_pins.c.tool)
        if server is not None:
            query = query.where(tool_pins.c.server == server)
        async with self._transaction(doing="listing tool pins") as session:
            rows = (await session.execute(query)).all()
        return tuple(_pins.pin_record(row) for row in rows)

    async def get_pins_of(self, servers: Sequence[str]) -> dict[str, dict[str, PinCheck]]:
        """Every pin of each of `servers` as a check needs it (fingerprint, approved), by server then
        tool, in one query (a server without pins maps to an empty dict)."""
        if not servers:
            return {}
        named = ", ".join(repr(server) for server in servers[:3])
        more = f" and {len(servers) - 3} more" if len(servers) > 3 else ""
        async with self._transaction(doing=f"reading the pins of {named}{more}") as session:
            return await _pins.read_pins_of(session, servers)

    # -- the catalog cache -------------------------------------------------------------------------

    async def get_catalogs(self) -> dict[str, CachedCatalog]:
        """Every server's cached listing, by server, in one query."""
        async with self._transaction(doing="reading the catalog cache") as session:
            return await _catalog.read_catalogs(session)

    async def set_catalog(self, entry: CachedCatalog) -> None:
        """Keep one server's listing (replacing its previous one) in one transaction."""
        async with self._transaction(write=True, doing=f"caching the listing of {entry.server!r}") as session:
            await _catalog.write_catalog(session, self._dialect, entry)

    async def delete_catalog(self, server: str) -> bool:
        """Forget a server's cached listing; False when there was none."""
        async with self._transaction(write=True, doing=f"forgetting the listing of {server!r}") as session:
            return await _catalog.delete_catalog(session, server)

    # -- OAuth credentials -------------------------------------------------------------------------

    async def get_oauth(self, server: str) -> OAuthCredentials | None:
        """The OAuth credentials kept for `server` (secrets in clear: for the token storage only)."""
        async with self._transaction(doing=f"reading the OAuth credentials of {server!r}") as session:
            return await _oauth.read_oauth(session, server)

    async def set_oauth_tokens(
        self, server: str, server_url: str, tokens_json: Mapping[str, Any] | None, expires_at: datetime | None
    ) -> None:
        """Keep `server`'s tokens and when its access token expires (None: the server did not say).

        Credentials kept for another `server_url` are dropped: they never travel to a server they
        were not issued for. Token refreshes are routine and not audited.
        """
        tokens = None if tokens_json is None else dict(tokens_json)
        await self._write_oauth(server, server_url, {"tokens": tokens, "token_expires_at": _maybe_utc(expires_at)})

    async def set_oauth_client(self, server: str, server_url: str, client_json: Mapping[str, Any] | None) -> None:
        """Keep the OAuth client registered for `server` (credentials for another URL are dropped)."""
        await self._write_oauth(server, server_url, {"client_info": None if client_json is None else dict(client_json)})

    async def delete_oauth(self, server: str) -> bool:
        """Forget `server`'s OAuth credentials (sign out); whether there were any."""
        delete = (
            sa.delete(oauth_credentials)
            .where(oauth_credentials.c.server == server)
            .returning(oauth_credentials.c.server)
        )
        async with self._transaction(write=True, doing=f"deleting the OAuth credentials of {server!r}") as session:
            deleted = (await session.execute(delete)).first()
        return deleted is not None

    async def _write_oauth(self, server: str, server_url: str, changes: Mapping[str, Any]) -> None:
        if not server_url:
            raise UsageError("OAuth credentials need the server URL they were issued for.")
        async with self._transaction(write=True, doing=f"keeping the OAuth credentials of {server!r}") as session:
            kept = await _oauth.read_oauth(session, server)  # only to say so below; the write decides alone
            await _oauth.write_oauth(session, self._dialect, server, server_url, changes, now=_now())
        if kept is not None and kept.server_url != server_url:
            logger.info("OAuth credentials of %r were for %s, not %s: dropped", server, kept.server_url, server_url)

    # -- each user's own OAuth credentials (per-user upstreams) -----------------------------------

    async def get_user_oauth(self, user: tuple[str, str], server: str) -> UserOAuth | None:
        """The sealed credentials `user` (issuer, subject) keeps for `server`."""
        async with self._transaction(doing=f"reading a user's OAuth credentials for {server!r}") as session:
            return await _user_oauth.read(session, user, server)

    async def list_user_oauth(self, user: tuple[str, str]) -> tuple[UserOAuth, ...]:
        """Every per-user upstream `user` has credentials for, by server name."""
        async with self._transaction(doing="listing a user's OAuth credentials") as session:
            return await _user_oauth.read_all(session, user)

    async def set_user_oauth(
        self, user: tuple[str, str], server: str, server_url: str, sealed: str, expires_at: datetime | None
    ) -> None:
        """Keep `user`'s sealed credentials for `server` at `server_url` (replacing what was kept)."""
        doing = f"keeping a user's OAuth credentials for {server!r}"
        async with self._transaction(write=True, doing=doing) as session:
            await _user_oauth.write(
                session, self._dialect, user, server, server_url, sealed, _maybe_utc(expires_at), now=_now()
            )

    async def delete_user_oauth(self, user: tuple[str, str], server: str) -> bool:
        """Forget `user`'s credentials for `server`; whether there were any. A deletion goes to the
        change log in the same transaction (`USER_GRANT_REVOKED`, naming the server only), so other
        stations on this store close that user's connection to it too."""
        async with self._transaction(
            write=True, doing=f"deleting a user's OAuth credentials for {server!r}"
        ) as session:
            deleted = await _user_oauth.delete(session, user, server)
            if deleted:
                await _changes.write_change(
                    session, self._dialect, ChangeKind.USER_GRANT_REVOKED, subject=server, origin=self._replica_id,
                    at=_now(),
                )  # fmt: skip
            return deleted

    # -- the seam --------------------------------------------------------------------------------

    def _transaction(self, *, doing: str, write: bool = False) -> AbstractAsyncContextManager[AsyncSession]:
        """One session in one transaction (see `Transactions.begin`)."""
        return self._transactions.begin(doing=doing, write=write)

    async def _write_action(
        self, session: AsyncSession, action: str, *, actor: str, server: str | None, detail: Mapping[str, Any]
    ) -> ActionRecord:
        """Audit `action`; a durable change also goes to the change log, in the same transaction."""
        record = ActionRecord(id=0, at=_now(), actor=actor, action=action, server=server, detail=dict(detail))
        insert = sa.insert(management_audit).values(**_row_values(record)).returning(management_audit.c.id)
        record = dataclasses.replace(record, id=int((await session.execute(insert)).scalar_one()))
        kind = CHANGE_OF_ACTION.get(action)
        if kind is not None:
            subject = server if server is not None else detail.get("name")
            tool = detail.get("tool")
            await _changes.write_change(
                session,
                self._dialect,
                kind,
                subject=None if subject is None else str(subject),
                tool=None if tool is None else str(tool),
                origin=self._replica_id,
                at=record.at,
            )
        return record

    async def _locked_server_row(self, session: AsyncSession, name: str) -> Row[Any]:
        query = sa.select(dynamic_servers).where(dynamic_servers.c.name == name).with_for_update()
        row = (await session.execute(query)).first()
        if row is None:
            raise StoreError(f"no dynamic server named {name!r}. `mcpstation servers list` shows the servers.")
        return row

    def _check_open(self) -> None:
        if self.is_closed:
            raise UsageError(f"the store at {self._label} is closed.")


def default_replica_id() -> str:
    """`host-pid-random`: names one open store among the stations sharing a database."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


def _create_database_file(file: Path) -> None:
    # The file holds secrets (dynamic servers' env and headers): readable by its owner only.
    try:
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(file, os.O_CREAT | os.O_RDWR, 0o600)
        os.close(descriptor)
    except OSError as exc:
        raise StoreError(
            f"cannot create the store's database {file}: {exc.strerror or exc}. "
            "Fix: make the directory writable, or choose another with --data-dir or MCPSTATION_DATA_DIR."
        ) from exc


async def _dispose(engine: AsyncEngine) -> None:
    with anyio.CancelScope(shield=True), anyio.move_on_after(DISPOSE_TIMEOUT_S):
        await engine.dispose()


def _sqlite_busy(exc: OperationalError) -> bool:
    """SQLite said "busy" or "locked" (by code): another connection holds the lock a migration needs."""
    code = getattr(exc.orig, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _open_hint(exc: BaseException) -> str:
    """What to do about a failed open, where the database says why in a code (not in words)."""
    original = exc.orig if isinstance(exc, DBAPIError) else None
    code = getattr(original, "sqlstate", None)
    if code == PG_NO_SUCH_DATABASE:
        return ". Fix: create it first (`createdb -h HOST -O USER NAME`, or CREATE DATABASE as a superuser)."
    if code == PG_NOT_ALLOWED:
        return (
            ". Fix: let this user create the tables: make the database its own (`createdb -O USER NAME`, or "
            "ALTER DATABASE NAME OWNER TO USER), or GRANT CREATE ON SCHEMA public TO USER."
        )
    return ""


def _check_actor(actor: str) -> None:
    if not actor:
        raise UsageError("a change needs an actor (who asked for it) for the audit.")


def _check_status(status: str) -> None:
    if status not in SERVER_STATUSES:
        raise UsageError(f"status must be one of {', '.join(SERVER_STATUSES)}, not {status!r}.")


def _limit(limit: int) -> int:
    if limit < 1:
        raise UsageError(f"limit must be at least 1, not {limit}.")
    return limit


# Built once: constructing the statement costs more than a single-row batch's own work.
_CALL_INSERT = sa.insert(call_audit)
_CALL_INSERT_RETURNING = _CALL_INSERT.returning(call_audit.c.id, sort_by_parameter_order=True)


def _auditing(first: CallEntry | CallRecord, count: int) -> str:
    """What a failed audit write was doing, for its error."""
    return f"auditing a call to {first.server!r}/{first.tool!r}" if count == 1 else f"auditing {count} calls"


def _new_call_record(entry: CallEntry, *, keep_arguments: bool) -> CallRecord:
    """The row `entry` becomes (`_call_rows.call_values`), id 0 until the database assigns one."""
    return CallRecord(0, *call_values(entry, keep_arguments=keep_arguments))


def _row_values(record: CallRecord | ActionRecord) -> dict[str, Any]:
    """An audit record's columns, but the id the database assigns."""
    return {field.name: getattr(record, field.name) for field in dataclasses.fields(record) if field.name != "id"}


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _server_record(row: Row[Any], *, reveal_secrets: bool) -> DynamicServer:
    spec = load_spec(row.spec, name=row.name).model_copy(update={"enabled": row.enabled})
    return DynamicServer(
        name=row.name,
        spec=spec if reveal_secrets else redact(spec),
        enabled=row.enabled,
        status=row.status,
        note=row.note,
        added_by=row.added_by,
        added_at=_utc(row.added_at),
        updated_at=_utc(row.updated_at),
    )


def _call_record(row: Row[Any]) -> CallRecord:
    return CallRecord(
        id=int(row.id),
        at=_utc(row.at),
        server=row.server,
        tool=row.tool,
        caller=row.caller,
        argument_bytes=row.argument_bytes,
        argument_sha256=row.argument_sha256,
        arguments=row.arguments,
        outcome=Outcome(row.outcome),
        error=row.error,
        duration_s=row.duration_s,
        kind=row.kind,
        issuer=row.issuer,
        subject=row.subject,
        client_id=row.client_id,
        token_id=row.token_id,
        upstream=row.upstream,
        via=row.via,
        run_id=row.run_id,
    )


def _action_record(row: Row[Any]) -> ActionRecord:
    return ActionRecord(
        id=int(row.id), at=_utc(row.at), actor=row.actor, action=row.action, server=row.server, detail=row.detail
    )


def _token_record(row: Row[Any]) -> ApiToken:
    return ApiToken(
        id=int(row.id),
        name=row.name,
        role=row.role,
        created_at=_utc(row.created_at),
        last_used_at=_maybe_utc(row.last_used_at),
    )
