"""The store: dynamic servers, call and management audit, API tokens, tool pins and OAuth credentials in a database.

SQLite in the data directory by default, PostgreSQL given its URL; the schema is migrated with
Alembic when a `Store` opens and is behind.

The names below are imported when first used (PEP 562): the records and the data directory cost
nothing, while `Store` brings SQLAlchemy, so a module that only names `Store` in annotations
imports it under `TYPE_CHECKING` and a station without a store never loads the database layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpstation._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mcpstation.store._location import DATA_DIR_ENV_VAR, DATABASE_FILE_NAME, default_data_dir
    from mcpstation.store._outage import StoreOutage
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
        PinCheck,
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
    "PinCheck",
    "Role",
    "ServerStatus",
    "Store",
    "StoreOutage",
    "ToolPin",
    "UserOAuth",
    "default_data_dir",
]

_HOMES: dict[str, str] = {
    **dict.fromkeys(("DATA_DIR_ENV_VAR", "DATABASE_FILE_NAME", "default_data_dir"), "mcpstation.store._location"),
    "ChangeSignal": "mcpstation.store._signals",
    "StoreOutage": "mcpstation.store._outage",
    "REDACTED": "mcpstation.store._specs",
    **dict.fromkeys(
        (
            "CALL_OUTCOMES",
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
            "DynamicServer",
            "OAuthCredentials",
            "PinCheck",
            "Role",
            "ServerStatus",
            "ToolPin",
            "UserOAuth",
        ),
        "mcpstation.store.records",
    ),
    "Store": "mcpstation.store.store",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
