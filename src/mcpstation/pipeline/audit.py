"""The audit layer: every request that reached a visible entry is recorded with its typed outcome.

Recording never slows a request: the layer puts a record on a bounded queue and the writer task
stores it. When the station closes, the queue is closed and the writer drains what is left
before the store is closed, so no record is lost and no write outlives the station.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpstation.catalog import AnyResult
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.request import Handler, Request
from mcpstation.store import Store

logger = logging.getLogger(__name__)

AUDIT_QUEUE_SIZE = 10_000  # records waiting to be written; beyond this a record is dropped, and logged
AUDIT_DRAIN_TIMEOUT_S = 10.0  # bound on writing what is queued when the station closes
MAX_TARGET_CHARS = 200  # the store's name columns; longer URIs are cut


@dataclass(frozen=True, slots=True)
class AuditRecord:
    kind: str
    server: str
    target: str
    outcome: Outcome
    duration_s: float
    caller: str
    arguments: dict[str, Any]
    error: str | None


class AuditTrail:
    """The queue and its writer; `layer` feeds it, `run` (a station task) writes, `close` drains."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.dropped = 0  # records the full queue refused
        self.failed = 0  # records the store refused in the current outage
        self._send: MemoryObjectSendStream[AuditRecord]
        self._receive: MemoryObjectReceiveStream[AuditRecord]
        self._send, self._receive = anyio.create_memory_object_stream[AuditRecord](AUDIT_QUEUE_SIZE)
        self._done = anyio.Event()

    async def run(self) -> None:
        """Write records until the queue is closed and empty; a failed write is logged, never fatal."""
        try:
            async with self._receive:
                async for record in self._receive:
                    await self._write(record)
        finally:
            self._done.set()

    async def _write(self, record: AuditRecord) -> None:
        """Write one record. While the store fails, the first failure is logged with its traceback
        and the rest are counted; the count is reported when writing works again."""
        try:
            await self.store.record_call(
                record.server,
                record.target[:MAX_TARGET_CHARS],
                outcome=record.outcome,
                duration_s=record.duration_s,
                caller=record.caller,
                arguments=record.arguments,
                error=record.error,
                kind=record.kind,
            )
        except Exception:  # boundary: auditing must not take the station down
            self.failed += 1
            if self.failed == 1:
                logger.exception(
                    "could not write an audit record for %s/%s (%s); records are lost until the store works again",
                    record.server, record.target, record.kind,
                )  # fmt: skip
            return
        if self.failed:
            logger.warning("audit writes work again; %d records could not be written", self.failed)
            self.failed = 0

    async def close(self) -> None:
        """Take no more records; return once every queued one is written (bounded)."""
        self._send.close()
        with anyio.move_on_after(AUDIT_DRAIN_TIMEOUT_S, shield=True) as scope:
            await self._done.wait()
        if scope.cancelled_caught:
            logger.warning(
                "audit writer did not finish within %g s; some records were not written", AUDIT_DRAIN_TIMEOUT_S
            )

    def record(self, request: Request, outcome: Outcome, duration_s: float, error: str | None) -> None:
        audited = AuditRecord(
            kind=str(request.kind),
            server=request.server,
            target=request.target,
            outcome=outcome,
            duration_s=duration_s,
            caller=request.caller.identity,
            arguments=dict(request.arguments),
            error=error,
        )
        try:
            self._send.send_nowait(audited)
        except anyio.WouldBlock:
            self.dropped += 1
            logger.warning("audit queue full; %s %s was not audited", request.kind, request.name)
        except anyio.ClosedResourceError:
            pass  # the station is closing; requests still finishing are not audited

    def layer(self, handler: Handler) -> Handler:
        async def audited(request: Request) -> AnyResult:
            started = anyio.current_time()
            try:
                result = await handler(request)
            except anyio.get_cancelled_exc_class():
                self.record(request, Outcome.CANCELLED, anyio.current_time() - started, "the caller cancelled")
                raise
            self.record(request, result.outcome, result.duration_s, result.error)
            return result

        return audited
