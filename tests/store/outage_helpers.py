"""Ways to take a store away for real, and bring it back: a TCP proxy in front of PostgreSQL that is
cut (every connection closed, the port refusing) and restored on the same port; an SQLite file
whose write lock another connection holds; an SQLite file on a small tmpfs that is filled up."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup

CHUNK = 65536
LOCK_TIMEOUT_S = 30.0  # the station's own write transaction letting go, on a loaded machine
LOCK_RETRY_S = 0.01


class TcpProxy:
    """Forwards 127.0.0.1:`port` to `target`; `cut` closes every connection and the port, `restore`
    listens again on the same port."""

    def __init__(self, task_group: TaskGroup, target: tuple[str, int]) -> None:
        self._task_group = task_group
        self._target = target
        self.port = 0
        self._scope: anyio.CancelScope | None = None

    async def restore(self) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        self.port = listener.extra(SocketAttribute.local_port)
        self._scope = anyio.CancelScope()
        self._task_group.start_soon(self._serve, listener, self._scope)

    async def cut(self) -> None:
        assert self._scope is not None
        self._scope.cancel()
        self._scope = None

    async def _serve(self, listener: SocketListener, scope: anyio.CancelScope) -> None:
        with scope:
            async with listener, anyio.create_task_group() as connections:
                await listener.serve(self._forward, task_group=connections)

    async def _forward(self, client: SocketStream) -> None:
        async with client, await anyio.connect_tcp(*self._target) as upstream:
            async with anyio.create_task_group() as pumps:

                async def pump(source: SocketStream, sink: SocketStream) -> None:
                    with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        while True:
                            await sink.send(await source.receive(CHUNK))
                    pumps.cancel_scope.cancel()

                pumps.start_soon(pump, client, upstream)
                pumps.start_soon(pump, upstream, client)


@asynccontextmanager
async def tcp_proxy(host: str, port: int) -> AsyncIterator[TcpProxy]:
    async with anyio.create_task_group() as task_group:
        proxy = TcpProxy(task_group, (host, port))
        await proxy.restore()
        try:
            yield proxy
        finally:
            task_group.cancel_scope.cancel()


class SqliteLock:
    """Another connection holding the database file's write lock (readers go on: WAL)."""

    def __init__(self, file: Path) -> None:
        self._file = file
        self._connection: sqlite3.Connection | None = None

    async def cut(self) -> None:
        """Take the write lock as soon as the station's own write (an audit commit, say) lets go.

        Asked without a busy wait and retried between event-loop turns: a blocking wait here would
        stop the loop that is to finish the station's transaction, and time out against it."""
        self._connection = sqlite3.connect(self._file, isolation_level=None, timeout=0)
        with anyio.fail_after(LOCK_TIMEOUT_S):
            while True:
                try:
                    self._connection.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY:
                        raise
                await anyio.sleep(LOCK_RETRY_S)

    async def restore(self) -> None:
        assert self._connection is not None
        self._connection.execute("ROLLBACK")
        self._connection.close()
        self._connection = None


class FullDisk:
    """A tmpfs of `size` mounted at `where`; `cut` fills what is left of it, `restore` frees it."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self._filler = where / "filler"

    async def cut(self) -> None:
        with self._filler.open("wb") as filler, suppress(OSError):  # ENOSPC ends the filling
            while True:
                filler.write(b"\0" * CHUNK)
                filler.flush()
                os.fsync(filler.fileno())

    async def restore(self) -> None:
        self._filler.unlink()


@contextmanager
def small_disk(where: Path, size: str = "4m") -> Iterator[FullDisk]:
    """A tmpfs mounted at `where`, unmounted afterwards; skips the test where this process may not mount one."""
    where.mkdir(parents=True, exist_ok=True)
    command = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)]
    try:
        mounted = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as exc:
        pytest.skip(f"cannot mount a small disk for the full-disk outage: {exc}")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small disk for the full-disk outage: {mounted.stderr.strip()}")
    try:
        yield FullDisk(where)
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
