"""The store: dynamic servers, call and management audit, API tokens, tool pins and OAuth credentials in a database.

SQLite in the data directory by default, PostgreSQL given its URL; the schema is migrated with
Alembic when a `Store` opens.
"""

from mcpstation.store._location import DATA_DIR_ENV_VAR, DATABASE_FILE_NAME, default_data_dir
from mcpstation.store._signals import ChangeSignal
from mcpstation.store._specs import REDACTED
from mcpstation.store.records import (
    CALL_OUTCOMES,
    ROLES,
    SERVER_STATUSES,
    ActionRecord,
    ApiToken,
    CachedCatalog,
    CallEntry,
    CallOutcome,
    CallPrincipal,
    CallRecord,
    ChangeKind,
    ChangeRecord,
    DynamicServer,
    OAuthCredentials,
    Role,
    ServerStatus,
    ToolPin,
    UserOAuth,
)
from mcpstation.store.store import Store

__all__ = [
    "CALL_OUTCOMES",
    "DATABASE_FILE_NAME",
    "DATA_DIR_ENV_VAR",
    "REDACTED",
    "ROLES",
    "SERVER_STATUSES",
    "ActionRecord",
    "ApiToken",
    "CachedCatalog",
    "CallEntry",
    "CallOutcome",
    "CallPrincipal",
    "CallRecord",
    "ChangeKind",
    "ChangeRecord",
    "ChangeSignal",
    "DynamicServer",
    "OAuthCredentials",
    "Role",
    "ServerStatus",
    "Store",
    "ToolPin",
    "UserOAuth",
    "default_data_dir",
]
