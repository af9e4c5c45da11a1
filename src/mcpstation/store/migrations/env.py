"""Alembic's environment for the store: runs on the connection `mcpstation.store` hands it.

The store runs `alembic upgrade head` in-process at open (`mcpstation.store._migrate`), over the
async engine through `connection.run_sync`, passing the sync connection in
`config.attributes["connection"]`. There is no `alembic.ini` and no offline mode.
"""

from __future__ import annotations

from alembic import context

from mcpstation.store._schema import METADATA

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "mcpstation's migrations run when a Store opens (Store.open); they take no alembic.ini or offline mode."
    )

context.configure(
    connection=connection,
    target_metadata=METADATA,
    render_as_batch=True,  # SQLite alters tables by copying them
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
