"""The store's tables, as SQLAlchemy Core metadata: what queries are written against.

Migrations (`migrations/versions/`) create these tables; they are frozen copies, never imports of
this module, so an old revision keeps meaning what it meant. `tests/store/test_migrations.py`
checks that the migrated schema and this metadata agree.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

from mcpstation.outcomes import Outcome
from mcpstation.store.records import ChangeKind

METADATA = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class JsonDocument(sa.TypeDecorator[Any]):
    """JSON everywhere; PostgreSQL stores it as JSONB (indexable, compact). The PostgreSQL dialect
    (some 30 ms of imports, every driver's module) is loaded only by a store that speaks it."""

    impl = sa.JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return super().load_dialect_impl(dialect)


JSON_TYPE = JsonDocument()
# A 64-bit id on PostgreSQL; on SQLite only INTEGER PRIMARY KEY is the auto-incrementing rowid.
ID_TYPE = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
NAME_LENGTH = 200
URL_LENGTH = 1000
TIMESTAMP = sa.DateTime(timezone=True)

dynamic_servers = sa.Table(
    "dynamic_servers",
    METADATA,
    sa.Column("name", sa.String(NAME_LENGTH), primary_key=True),
    sa.Column("spec", JSON_TYPE, nullable=False),  # the full ServerSpec, secrets included
    sa.Column("transport", sa.String(32), nullable=False),
    sa.Column("enabled", sa.Boolean(), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("note", sa.Text(), nullable=True),
    sa.Column("added_by", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("added_at", TIMESTAMP, nullable=False),
    sa.Column("updated_at", TIMESTAMP, nullable=False),
    sa.CheckConstraint("status IN ('active', 'pending_approval')", name="status"),
)

call_audit = sa.Table(
    "call_audit",
    METADATA,
    sa.Column("id", ID_TYPE, primary_key=True, autoincrement=True),
    sa.Column("at", TIMESTAMP, nullable=False),
    sa.Column("server", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("tool", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("caller", sa.String(NAME_LENGTH), nullable=True),
    sa.Column("argument_bytes", sa.Integer(), nullable=False),
    sa.Column("argument_sha256", sa.String(64), nullable=False),
    sa.Column("arguments", JSON_TYPE, nullable=True),  # only when the store keeps arguments
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("error", sa.Text(), nullable=True),
    sa.Column("duration_s", sa.Float(), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False, server_default="tools/call"),
    sa.Column("issuer", sa.String(URL_LENGTH), nullable=True),
    sa.Column("subject", sa.String(NAME_LENGTH), nullable=True),
    sa.Column("client_id", sa.String(NAME_LENGTH), nullable=True),
    sa.Column("token_id", sa.String(NAME_LENGTH), nullable=True),
    sa.Column("upstream", sa.String(URL_LENGTH), nullable=True),
    sa.Column("via", sa.String(16), nullable=True),
    sa.Column("run_id", sa.String(NAME_LENGTH), nullable=True),
    sa.CheckConstraint("outcome IN (" + ", ".join(f"'{o}'" for o in Outcome) + ")", name="outcome"),
    sa.Index(None, "at"),
    sa.Index(None, "server", "at"),
)

user_oauth = sa.Table(
    "user_oauth",
    METADATA,
    sa.Column("user_issuer", sa.String(URL_LENGTH), nullable=False),
    sa.Column("user_subject", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("server", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("server_url", sa.String(URL_LENGTH), nullable=False),
    sa.Column("sealed", sa.Text(), nullable=False),  # tokens and client, encrypted by the station
    sa.Column("token_expires_at", TIMESTAMP, nullable=True),
    sa.Column("updated_at", TIMESTAMP, nullable=False),
    sa.PrimaryKeyConstraint("user_issuer", "user_subject", "server"),
)

management_audit = sa.Table(
    "management_audit",
    METADATA,
    sa.Column("id", ID_TYPE, primary_key=True, autoincrement=True),
    sa.Column("at", TIMESTAMP, nullable=False),
    sa.Column("actor", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("action", sa.String(64), nullable=False),
    sa.Column("server", sa.String(NAME_LENGTH), nullable=True),
    sa.Column("detail", JSON_TYPE, nullable=False),  # command/args or URL; never secret values
    sa.Index(None, "at"),
    sa.Index(None, "server", "at"),
)

api_tokens = sa.Table(
    "api_tokens",
    METADATA,
    sa.Column("id", ID_TYPE, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(NAME_LENGTH), nullable=False, unique=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", TIMESTAMP, nullable=False),
    sa.Column("last_used_at", TIMESTAMP, nullable=True),
    sa.CheckConstraint("role IN ('admin', 'user')", name="role"),
)

tool_pins = sa.Table(
    "tool_pins",
    METADATA,
    sa.Column("server", sa.String(NAME_LENGTH), primary_key=True),
    sa.Column("tool", sa.String(NAME_LENGTH), primary_key=True),
    sa.Column("fingerprint", sa.String(128), nullable=False),
    sa.Column("first_seen", TIMESTAMP, nullable=False),
    sa.Column("approved_at", TIMESTAMP, nullable=True),
)

oauth_credentials = sa.Table(
    "oauth_credentials",
    METADATA,
    sa.Column("server", sa.String(NAME_LENGTH), primary_key=True),
    sa.Column("server_url", sa.Text(), nullable=False),  # what the credentials were issued for
    sa.Column("tokens", JSON_TYPE, nullable=True),  # access and refresh tokens: secrets
    sa.Column("token_expires_at", TIMESTAMP, nullable=True),
    sa.Column("client_info", JSON_TYPE, nullable=True),  # the registered client, maybe with its secret
    sa.Column("updated_at", TIMESTAMP, nullable=False),
)

catalog_cache = sa.Table(
    "catalog_cache",
    METADATA,
    sa.Column("server", sa.String(NAME_LENGTH), primary_key=True),
    sa.Column("spec_hash", sa.String(64), nullable=False),  # the entry it was listed under; another one ignores it
    sa.Column("digest", sa.String(64), nullable=False),  # SHA-256 of `listing`, to skip rewriting the same
    sa.Column("listing", JSON_TYPE, nullable=False),  # {"tools": [...], "prompts": [...], "resources", "templates"}
    sa.Column("session", JSON_TYPE, nullable=False),  # protocol version, server name and version, instructions
    sa.Column("ttl_ms", sa.BigInteger(), nullable=True),  # the server's cache hint, when it gave one
    sa.Column("listed_at", TIMESTAMP, nullable=False),
)

# Append-only and numbered in commit order (see `_changes`): what every running station follows.
change_log = sa.Table(
    "change_log",
    METADATA,
    sa.Column("id", ID_TYPE, primary_key=True, autoincrement=True),
    sa.Column("at", TIMESTAMP, nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("subject", sa.String(NAME_LENGTH), nullable=True),
    sa.Column("tool", sa.String(NAME_LENGTH), nullable=True),
    sa.Column("origin", sa.String(NAME_LENGTH), nullable=False),
    sa.CheckConstraint("kind IN (" + ", ".join(f"'{k}'" for k in ChangeKind) + ")", name="kind"),
    sqlite_autoincrement=True,
)
