"""The audit layer: every request that reached a visible entry is recorded with its typed outcome.

Each record names who asked (the caller, and for one who signed in its token's issuer, subject,
client and id, never the token) and the upstream the request reached. Its error text is the
result's `error_on_record`: never what only the caller may see (a user's authorization URL). An answer that leaves the
process is audited before it leaves. When the caller is in another
process (the HTTP API, the gateway, the CLI: `Face.answers_leave_process`), the layer waits until
the batch holding the record is committed, so a station killed at any moment has a record of every
answer it sent. The wait is bounded (`AUDIT_WAIT_S`): a store that fails or stalls delays an answer
by at most that, and the answer is then sent anyway, the miss logged and counted, because auditing
never takes a call or the station down. The library and the framework adapters share the station's
process: a crash that loses their records loses their answers with them, so their records are
written behind and never slow a call.

The writer task commits in groups: it takes the first queued record and whatever is queued behind
it (up to `AUDIT_BATCH_MAX`) and writes them in one transaction, so concurrent requests share one
commit. A record someone waits for is written at once, after one turn of the event loop lets
requests finishing at the same moment queue theirs (a group commit that waits well under a
millisecond). A write-behind record waits up to `AUDIT_BEHIND_S` for company, so a library making
calls one after another pays one commit per batch rather than one per call; a waited record
arriving meanwhile takes the batch with it at once. When the station closes, the queue is closed
and the writer drains what is left before the store is closed, so no queued record is lost and no
write outlives the station. What a committed record survives (a crash of the station; a power
loss) is the store's to say: `docs/architecture.md`, "What the audit promises".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpstation.catalog import AnyResult
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.request import Handler, Request
from mcpstation.store import CallEntry, CallPrincipal

if TYPE_CHECKING:
    from mcpstation.store import Store

logger = logging.getLogger(__name__)

AUDIT_QUEUE_SIZE = 10_000  # records waiting to be written; beyond this a record is dropped, and logged
AUDIT_BATCH_MAX = 500  # records written in one transaction at most
AUDIT_BEHIND_S = 0.05  # how long a write-behind record waits for others to share its transaction
AUDIT_WAIT_S = 2.0  # how long an answer leaving the process waits for its record to be committed
AUDIT_DRAIN_TIMEOUT_S = 10.0  # bound on writing what is queued when the station closes
MAX_TARGET_CHARS = 200  # the store's name columns; longer URIs are cut


class AuditTrail:
    """The queue and its writer; `layer` feeds it, `run` (a station task) writes, `close` drains.

    Records are numbered in queue order; the writer counts how many it is done with, so a request
    waits for its own number with one shared event per batch rather than one per record.
    """

    def __init__(self, store: Store, *, upstream_of: Callable[[str], str | None] | None = None) -> None:
        """`upstream_of(server)` names the upstream a request to `server` reaches, and as whom."""
        self.store = store
        self.upstream_of = upstream_of
        self.dropped = 0  # records the full queue refused
        self.failed = 0  # records the store refused in the current outage
        self.unconfirmed = 0  # answers sent before their record was written, in the current slowdown
        # Each record with whether an answer waits for it.
        self._send: MemoryObjectSendStream[tuple[CallEntry, bool]]
        self._receive: MemoryObjectReceiveStream[tuple[CallEntry, bool]]
        self._send, self._receive = anyio.create_memory_object_stream[tuple[CallEntry, bool]](AUDIT_QUEUE_SIZE)
        self._queued = 0  # records accepted so far: the last one's number
        self._settled = 0  # records the writer is done with (committed or failed), in queue order
        self._batch_done = anyio.Event()  # set, then replaced, each time the writer finishes a batch
        self._done = anyio.Event()
        self._urgent = anyio.Event()  # a waited record (or the close) ends a write-behind batch's wait
        self._closing = False

    async def run(self) -> None:
        """Write records in batches until the queue is closed and empty; a failed write is logged, never fatal."""
        try:
            async with self._receive:
                async for first, waited in self._receive:
                    batch = [first]
                    if self._urgent.is_set():
                        self._urgent = anyio.Event()  # set again by the next waited record
                    if waited:
                        await anyio.lowlevel.checkpoint()  # the group window: requests finishing now queue theirs
                    waited = self._take_queued(batch) or waited
                    if not (waited or self._closing) and len(batch) < AUDIT_BATCH_MAX:
                        # Linger without waking per record: only a waited record, or the close, ends it early.
                        with anyio.move_on_after(AUDIT_BEHIND_S):
                            await self._urgent.wait()
                        self._take_queued(batch)
                    await self._write(batch)
                    self._settled += len(batch)
                    finished, self._batch_done = self._batch_done, anyio.Event()
                    finished.set()
        finally:
            self._done.set()
            self._batch_done.set()  # nobody waits on a writer that has stopped

    def _take_queued(self, batch: list[CallEntry]) -> bool:
        """Move what is queued into `batch` (up to the cap); whether any of it is waited for."""
        waited = False
        while len(batch) < AUDIT_BATCH_MAX:
            try:
                entry, urgent = self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
            batch.append(entry)
            waited = waited or urgent
        return waited

    async def _write(self, batch: list[CallEntry]) -> None:
        """Write one batch in one transaction. While the store fails, the first failure is logged
        with its traceback and the rest are counted; the count is reported when writing works again.

        A batch that fails is never written again. The failure may come after the database has
        committed (a connection lost while the commit's answer was on its way), and rows carry no
        key that would let a second attempt see the first, so a retry could store every call of the
        batch twice. A lost batch is counted and logged; a doubled one would be silent.
        """
        try:
            await self.store.write_calls(batch)
        except Exception:  # boundary: auditing must not take the station down
            self.failed += len(batch)
            if self.failed == len(batch):
                first = batch[0]
                logger.exception(
                    "could not write an audit record for %s/%s (%s, in a batch of %d); "
                    "records are lost until the store works again",
                    first.server, first.tool, first.kind, len(batch),
                )  # fmt: skip
            return
        if self.failed:
            logger.warning("audit writes work again; %d records could not be written", self.failed)
            self.failed = 0

    async def close(self) -> None:
        """Take no more records; return once every queued one is written (bounded)."""
        self._send.close()
        self._closing = True
        self._urgent.set()
        with anyio.move_on_after(AUDIT_DRAIN_TIMEOUT_S, shield=True) as scope:
            await self._done.wait()
        if scope.cancelled_caught:
            logger.warning(
                "audit writer did not finish within %g s; some records were not written", AUDIT_DRAIN_TIMEOUT_S
            )

    def record(
        self, request: Request, outcome: Outcome, duration_s: float, error: str | None, *, waited: bool = False
    ) -> int | None:
        """Queue the record of `request`; its number (see `wait_written`), or None when it was not queued.

        `waited`: an answer will wait for it (`wait_written`), so the writer commits it at once.
        """
        principal = request.caller.principal
        entry = CallEntry(
            principal=None
            if principal is None
            else CallPrincipal(principal.issuer, principal.subject, principal.client_id, principal.token_id),
            upstream=self.upstream_of(request.server) if self.upstream_of is not None else None,
            server=request.server,
            tool=request.target[:MAX_TARGET_CHARS],
            outcome=outcome,
            duration_s=duration_s,
            caller=request.caller.identity,
            arguments=dict(request.arguments),
            error=error,
            at=datetime.now(UTC),  # when it ended, not when its batch is written
            kind=str(request.kind),
            via=str(request.via) if request.via is not None else None,
            run_id=request.run_id,
        )
        try:
            self._send.send_nowait((entry, waited))
        except anyio.WouldBlock:
            self.dropped += 1
            logger.warning("audit queue full; %s %s was not audited", request.kind, request.name)
            return None
        except anyio.ClosedResourceError:
            return None  # the station is closing; requests still finishing are not audited
        self._queued += 1
        if waited:
            self._urgent.set()
        return self._queued

    async def wait_written(self, number: int) -> None:
        """Return once the writer is done with record `number` (committed, or failed and logged
        there), or after `AUDIT_WAIT_S`: then the miss is counted, and logged once per slowdown."""
        with anyio.move_on_after(AUDIT_WAIT_S) as scope:
            while self._settled < number and not self._done.is_set():
                await self._batch_done.wait()
        if scope.cancelled_caught:
            self.unconfirmed += 1
            if self.unconfirmed == 1:
                logger.warning(
                    "an audit record was not written within %g s; answering without waiting for it "
                    "(answers are counted until records are written in time again)",
                    AUDIT_WAIT_S,
                )
        elif self.unconfirmed:
            logger.warning("audit records are written in time again; %d answers went first", self.unconfirmed)
            self.unconfirmed = 0

    def layer(self, handler: Handler) -> Handler:
        async def audited(request: Request) -> AnyResult:
            started = anyio.current_time()
            try:
                result = await handler(request)
            except anyio.get_cancelled_exc_class():
                self.record(request, Outcome.CANCELLED, anyio.current_time() - started, "the caller cancelled")
                raise
            leaves = request.caller.face.answers_leave_process
            number = self.record(request, result.outcome, result.duration_s, result.error_on_record, waited=leaves)
            if number is not None and leaves:
                await self.wait_written(number)
            return result

        return audited
