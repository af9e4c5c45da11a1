"""The one module that talks to pydantic-monty: a script run in the station's sandbox workers, driven step by step.

Monty (Pydantic's Python interpreter written in Rust) runs each script in worker processes of a
pool (`open_pool`, owned by `workers.py`): no file system, no environment, no network, no host
modules, and a fresh process for every checkout, so no two runs ever share one. Every name the
script leaves undefined comes to the host as a snapshot; only the names in `functions` are
answered, anything else raises `NameError` in the script, and OS calls (files, environment, clock
beyond the policy) get Monty's default refusal. A host function always answers with a future, so
a script's `asyncio.gather` runs its calls concurrently (each in this run's task group); the run
is driven until it completes, fails, or the host's budget says stop, which ends it without the
script being able to catch it.

A call the host says `pauses` (one that waits for a person's confirmation) is answered before
its snapshot is resumed: the run stays suspended at that call and nothing after it in the script
runs. Meanwhile it holds no worker: its state (the suspended snapshot, with the futures of calls
still in flight) is dumped and the worker given back to the pool; once the call is answered the
state is loaded into whichever worker is free and the script resumes with the call's value or its
exception, like any other call's. The sandbox's CPU clock runs only while sandboxed code executes
and travels with the state, so its limit holds across the pause.

Monty reports a tripped limit as an exception inside the sandbox (`MemoryError: memory limit
exceeded ...`); `_limit_of` is the one place that reads which, so an API change touches this file only.

The library's runtime threads outlive the pool; loading it registers the exit hook that keeps an
exit from aborting while one of them is still inside Python (`_exit.py`).
"""

from __future__ import annotations

import atexit
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncFutureSnapshot,
    AsyncMonty,
    AsyncMontySession,
    AsyncNameLookupSnapshot,
    ExternalSettledResult,
    MontyComplete,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
    MontyTypingError,
    ResourceLimits,
)

from mcpstation.codemode._exit import let_foreign_threads_leave
from mcpstation.codemode.limits import Limit
from mcpstation.codemode.sandbox import Ending, HostFunction, Pauses, SandboxEnd, SandboxLimits

Pool = AsyncMonty
"""The station's sandbox worker pool (`open_pool`), as `workers.py` holds it."""

SCRIPT_NAME = "script.py"
SUSPENSIONS_PER_CALL = 4  # host round trips one tool call may take (the call, its future, name lookups)
MIN_SUSPENSIONS = 200  # room for name lookups and sleeps in a run that calls few tools
KILL_GRACE_S = 2.0  # past the CPU limit, the pool kills a worker that did not stop itself
WARM_WORKERS = 1  # started ahead of the first checkout, so a run seldom waits for a process to start
CHECKOUTS_PER_WORKER = 1  # a worker process serves one checkout, then a fresh one replaces it

atexit.register(let_foreign_threads_leave)


@asynccontextmanager
async def open_pool(workers: int) -> AsyncIterator[Pool]:
    """A pool of at most `workers` sandbox processes, each serving a single checkout."""
    async with AsyncMonty(
        min_processes=min(WARM_WORKERS, workers),
        max_processes=workers,
        max_checkouts_per_worker=CHECKOUTS_PER_WORKER,
        feed_duration_limit_grace=KILL_GRACE_S,
    ) as pool:
        yield pool


class _Stop(Exception):
    """The host's budget ended the run."""

    def __init__(self, limit: Limit) -> None:
        super().__init__(limit)
        self.limit = limit


@dataclass(frozen=True, slots=True)
class _Pause:
    """The run stopped at a call that waits for an answer: the call, to be answered without a worker."""

    call_id: int
    function: HostFunction
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


async def run_script(
    code: str,
    *,
    pool: Pool,
    stubs: str,
    type_check: bool,
    limits: SandboxLimits,
    functions: Mapping[str, HostFunction],
    admit: Callable[[str], Limit | None],
    stopped: Callable[[], Limit | None],
    on_print: Callable[[str], None],
    pauses: Pauses = lambda function, args, kwargs: False,
) -> SandboxEnd:
    """Run `code` to its end in `pool`'s workers (one at a time; none while paused).

    `admit(function)` is asked before each host function is dispatched (a limit refuses it and ends
    the run); `stopped()` after each step (a limit the host saw meanwhile ends the run);
    `pauses(function, args, kwargs)` whether the run waits at that call until it is answered,
    giving its worker back meanwhile.
    """
    resource_limits: ResourceLimits = {
        "max_feed_duration_secs": limits.cpu_s,
        "max_memory": limits.memory_bytes,
        "max_recursion_depth": limits.recursion_depth,
        "max_suspensions": max(MIN_SUSPENSIONS, SUSPENSIONS_PER_CALL * limits.tool_calls),
        "max_total_sleep_secs": limits.sleep_s,
    }

    def checkout() -> AsyncMontySession:
        return pool.checkout(
            script_name=SCRIPT_NAME,
            limits=resource_limits,
            type_check=type_check,
            type_check_stubs=stubs,
            type_check_format="concise",
            os_policy={"sleep_system_max": limits.sleep_s},
        )

    try:
        value = await _drive(code, checkout, functions, admit, stopped, pauses, on_print)
    except _Stop as stop:
        return SandboxEnd(Ending.LIMIT, limit=stop.limit)
    except MontyTypingError as exc:
        return SandboxEnd(Ending.REJECTED, error=f"the type check refused the script:\n{exc.display()}")
    except MontySyntaxError as exc:
        return SandboxEnd(Ending.REJECTED, error=exc.display())
    except MontyRuntimeError as exc:
        limit = _limit_of(exc.exception())
        if limit is not None:
            return SandboxEnd(Ending.LIMIT, limit=limit, error=exc.display("type-msg"))
        return SandboxEnd(Ending.RAISED, error=exc.display())
    except MontyCrashedError as exc:
        if exc.timed_out:
            return SandboxEnd(Ending.LIMIT, limit=Limit.CPU_TIME, error=str(exc))
        return SandboxEnd(Ending.CRASHED, error=f"the sandbox worker died: {exc}")
    except MontyError as exc:
        return SandboxEnd(Ending.CRASHED, error=f"the sandbox failed: {exc}")
    return SandboxEnd(Ending.COMPLETED, value=value)


async def _drive(
    code: str,
    checkout: Callable[[], AsyncMontySession],
    functions: Mapping[str, HostFunction],
    admit: Callable[[str], Limit | None],
    stopped: Callable[[], Limit | None],
    pauses: Pauses,
    on_print: Callable[[str], None],
) -> Any:
    """Answer snapshots until the script completes; host calls run concurrently in a task group,
    which outlives each worker the run holds (a call in flight goes on while the run is paused)."""
    settled: dict[int, ExternalSettledResult] = {}
    arrived = anyio.Event()

    async def answer(call_id: int, function: HostFunction, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        nonlocal arrived
        try:
            settled[call_id] = {"return_value": await function(args, kwargs)}
        except Exception as exc:  # boundary: a host function's failure is the script's exception
            settled[call_id] = {"exception": exc}
        arrived.set()

    def printed(stream: str, text: str) -> None:
        on_print(text)

    failure: BaseException | None = None
    value: Any = None
    async with anyio.create_task_group() as calls:
        try:
            state: bytes | None = None  # the paused run, while it holds no worker
            while True:
                async with checkout() as session:
                    snapshot: Any
                    if state is None:
                        snapshot = await session.feed_start(code, print_callback=printed)
                    else:
                        snapshot = await session.load_snapshot(state, print_callback=printed)
                        snapshot = await snapshot.resume({"future": ...})  # the paused call: settled already
                    pause: _Pause | None = None
                    while not isinstance(snapshot, MontyComplete):
                        step = await _step(snapshot, functions, admit, stopped, pauses, settled, calls, answer)
                        if isinstance(step, _Pause):
                            pause = step
                            break
                        snapshot = step
                        if isinstance(snapshot, AsyncFutureSnapshot):
                            pending = snapshot.pending_call_ids
                            while not any(call_id in settled for call_id in pending):
                                arrived = anyio.Event()
                                await arrived.wait()
                    if pause is None:
                        value = snapshot.output
                        break
                    state = await session.dump()
                # The worker is back in the pool while the call waits for its answer.
                await answer(pause.call_id, pause.function, pause.args, pause.kwargs)
                if (limit := stopped()) is not None:
                    raise _Stop(limit)
        except (MontyError, _Stop) as exc:  # raised as itself below, not inside the group's ExceptionGroup
            failure = exc
        calls.cancel_scope.cancel()  # calls the script started and never awaited are not waited for
    if failure is not None:
        raise failure
    return value


async def _step(
    snapshot: Any,
    functions: Mapping[str, HostFunction],
    admit: Callable[[str], Limit | None],
    stopped: Callable[[], Limit | None],
    pauses: Pauses,
    settled: dict[int, ExternalSettledResult],
    calls: anyio.abc.TaskGroup,
    answer: Callable[[int, HostFunction, tuple[Any, ...], dict[str, Any]], Coroutine[Any, Any, None]],
) -> Any:
    """Answer one snapshot (a future snapshot once one of its calls has settled), or say the run pauses here."""
    if (limit := stopped()) is not None:
        raise _Stop(limit)
    if isinstance(snapshot, AsyncFunctionSnapshot):
        name = str(snapshot.function_name)
        if snapshot.is_os_function:
            return await snapshot.resume_not_handled()
        function = functions.get(name)
        if function is None:
            return await snapshot.resume({"exc_type": "NameError", "message": f"name {name!r} is not defined"})
        if (limit := admit(name)) is not None:
            raise _Stop(limit)
        if pauses(name, snapshot.args, snapshot.kwargs):
            return _Pause(snapshot.call_id, function, snapshot.args, snapshot.kwargs)
        calls.start_soon(answer, snapshot.call_id, function, snapshot.args, snapshot.kwargs)
        return await snapshot.resume({"future": ...})
    if isinstance(snapshot, AsyncNameLookupSnapshot):
        return await snapshot.resume()  # not a value the host gives: NameError
    if isinstance(snapshot, AsyncFutureSnapshot):
        pending = snapshot.pending_call_ids
        if not any(call_id in settled for call_id in pending):
            return snapshot  # the caller waits for one to settle
        return await snapshot.resume({call_id: settled.pop(call_id) for call_id in pending if call_id in settled})
    raise TypeError(f"unexpected sandbox snapshot {type(snapshot).__name__}")


def _limit_of(exc: BaseException) -> Limit | None:
    """Which sandbox limit an exception from Monty reports, if it reports one."""
    message = str(exc)
    if isinstance(exc, MemoryError) and "memory limit exceeded" in message:
        return Limit.MEMORY
    if isinstance(exc, RecursionError):
        return Limit.RECURSION
    if isinstance(exc, TimeoutError) and "time limit exceeded" in message:
        return Limit.CPU_TIME
    if isinstance(exc, TimeoutError) and "sleep limit exceeded" in message:
        return Limit.WALL_TIME
    if isinstance(exc, RuntimeError) and "suspension" in message:
        return Limit.TOOL_CALLS
    return None
