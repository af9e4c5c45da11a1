"""`Store.exclusive`: one holder at a time across every store on one database, released by a dead holder.

Each station opens its own `Store` (its own pool on PostgreSQL, its own file descriptors on
SQLite), so two stores on one database in one process contend exactly as two replicas do; the
killed holder is a real subprocess.
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from store_helpers import StoreTarget

from mcpstation.errors import StoreError

pytestmark = pytest.mark.anyio

HOLDER_READY_TIMEOUT_S = 30.0  # a subprocess importing the store on a loaded machine
TAKE_TIMEOUT_S = 10.0


async def test_one_holder_at_a_time_across_stores(store_target: StoreTarget) -> None:
    first, second = await store_target.open(), await store_target.open()
    try:
        order: list[str] = []
        held = anyio.Event()
        release = anyio.Event()

        async def hold_first() -> None:
            async with first.exclusive("refresh:remote"):
                order.append("first in")
                held.set()
                await release.wait()
                order.append("first out")

        with anyio.fail_after(TAKE_TIMEOUT_S * 2):
            async with anyio.create_task_group() as group:
                group.start_soon(hold_first)
                await held.wait()
                with pytest.raises(StoreError, match="refresh:remote"):
                    async with second.exclusive("refresh:remote", timeout_s=0.3):
                        order.append("second in too early")
                async with second.exclusive("refresh:other", timeout_s=TAKE_TIMEOUT_S):
                    order.append("other name in")  # another name is another lock
                release.set()
                async with second.exclusive("refresh:remote", timeout_s=TAKE_TIMEOUT_S):
                    order.append("second in")
        assert order == ["first in", "other name in", "first out", "second in"]
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_killed_holder_releases_the_lock(store_target: StoreTarget) -> None:
    data_dir = None if store_target.data_dir is None else str(store_target.data_dir)
    holder = textwrap.dedent(
        f"""
        from pathlib import Path
        import anyio
        from mcpstation.store import Store

        async def main() -> None:
            data_dir = {data_dir!r}
            store = await Store.open(
                {store_target.url!r},
                schema={store_target.schema!r},
                data_dir=None if data_dir is None else Path(data_dir),
            )
            async with store.exclusive("refresh:remote"):
                print("held", flush=True)
                await anyio.sleep(3600)

        anyio.run(main)
        """
    )
    store = await store_target.open()
    try:
        async with await anyio.open_process([sys.executable, "-c", holder], start_new_session=True) as process:
            try:
                assert process.stdout is not None
                with anyio.fail_after(HOLDER_READY_TIMEOUT_S):
                    assert await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 64) == b"held"
                with pytest.raises(StoreError):
                    async with store.exclusive("refresh:remote", timeout_s=0.3):
                        pass
            finally:
                os.killpg(process.pid, signal.SIGKILL)
            with anyio.fail_after(TAKE_TIMEOUT_S):
                assert await process.wait() == -signal.SIGKILL
                async with store.exclusive("refresh:remote", timeout_s=TAKE_TIMEOUT_S):
                    pass
    finally:
        await store.aclose()
