"""The one module that talks to pydantic-monty: a script run in a fresh sandbox worker, driven step by step.

Monty (Pydantic's Python interpreter written in Rust) runs each script in its own worker process:
no file system, no environment, no network, no host modules. Every name the script leaves
undefined comes to the host as a snapshot; only the names in `functions` are answered, anything
else raises `NameError` in the script, and OS calls (files, environment, clock beyond the policy)
get Monty's default refusal. A host function always answers with a future, so a script's
`asyncio.gather` runs its calls concurrently (each in this run's task group); the run is driven
until it completes, fails, or the host's budget says stop, which ends it without the script
being able to catch it.

A call the host says `pauses` (one that waits for a person's confirmation) is answered before
its snapshot is resumed: the run stays suspended at that call, nothing after it in the script
runs, and the sandbox's CPU clock (which runs only while sandboxed code executes) is not charged;
then the script resumes with the call's value or its exception, like any other call's.

Monty reports a tripped limit as an exception inside the sandbox (`MemoryError: memory limit
exceeded ...`); `_limit_of` is the one place that reads which, so an API change touches this file only.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio
import anyio.abc
from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncFutureSnapshot,
    AsyncMonty,
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

from mcpstation.codemode.limits import Limit
from mcpstation.codemode.sandbox import Ending, HostFunction, Pauses, SandboxEnd, SandboxLimits

SCRIPT_NAME = "script.py"
SUSPENSIONS_PER_CALL = 4  # host round trips one tool call may take (the call, its future, name lookups)
MIN_SUSPENSIONS = 200  # room for name lookups and sleeps in a run that calls few tools
KILL_GRACE_S = 2.0  # past the CPU limit, the pool kills a worker that did not stop itself


class _Stop(Exception):
    """The host's budget ended the run."""

    def __init__(self, limit: Limit) -> None:
        super().__init__(limit)
        self.limit = limit


async def run_script(
    code: str,
    *,
    stubs: str,
    type_check: bool,
    limits: SandboxLimits,
    functions: Mapping[str, HostFunction],
    admit: Callable[[str], Limit | None],
    stopped: Callable[[], Limit | None],
    on_print: Callable[[str], None],
    pauses: Pauses = lambda function, args, kwargs: False,
) -> SandboxEnd:
    """Run `code` to its end in a fresh worker.

    `admit(function)` is asked before each host function is dispatched (a limit refuses it and ends
    the run); `stopped()` after each step (a limit the host saw meanwhile ends the run);
    `pauses(function, args, kwargs)` whether the run waits at that call until it is answered.
    """
    resource_limits: ResourceLimits = {
        "max_feed_duration_secs": limits.cpu_s,
        "max_memory": limits.memory_bytes,
        "max_recursion_depth": limits.recursion_depth,
        "max_suspensions": max(MIN_SUSPENSIONS, SUSPENSIONS_PER_CALL * limits.tool_calls),
        "max_total_sleep_secs": limits.sleep_s,
    }
    try:
        async with (
            AsyncMonty(min_processes=1, max_processes=1, feed_duration_limit_grace=KILL_GRACE_S) as pool,
            pool.checkout(
                script_name=SCRIPT_NAME,
                limits=resource_limits,
                type_check=type_check,
                type_check_stubs=stubs,
                type_check_format="concise",
                os_policy={"sleep_system_max": limits.sleep_s},
            ) as session,
        ):
            snapshot = await session.feed_start(code, print_callback=lambda stream, text: on_print(text))
            value = await _drive(snapshot, functions, admit, stopped, pauses)
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
    snapshot: Any,
    functions: Mapping[str, HostFunction],
    admit: Callable[[str], Limit | None],
    stopped: Callable[[], Limit | None],
    pauses: Pauses,
) -> Any:
    """Answer snapshots until the script completes; host calls run concurrently in a task group."""
    settled: dict[int, ExternalSettledResult] = {}
    arrived = anyio.Event()

    async def answer(call_id: int, function: HostFunction, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        nonlocal arrived
        try:
            settled[call_id] = {"return_value": await function(args, kwargs)}
        except Exception as exc:  # boundary: a host function's failure is the script's exception
            settled[call_id] = {"exception": exc}
        arrived.set()

    failure: BaseException | None = None
    async with anyio.create_task_group() as calls:
        try:
            while not isinstance(snapshot, MontyComplete):
                snapshot = await _step(snapshot, functions, admit, stopped, pauses, settled, calls, answer)
                if isinstance(snapshot, AsyncFutureSnapshot):
                    pending = snapshot.pending_call_ids
                    while not any(call_id in settled for call_id in pending):
                        arrived = anyio.Event()
                        await arrived.wait()
        except (MontyError, _Stop) as exc:  # raised as itself below, not inside the group's ExceptionGroup
            failure = exc
        calls.cancel_scope.cancel()  # calls the script started and never awaited are not waited for
    if failure is not None:
        raise failure
    return snapshot.output


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
    """Answer one snapshot; a future snapshot is answered once one of its calls has settled."""
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
            await answer(snapshot.call_id, function, snapshot.args, snapshot.kwargs)  # suspended until answered
            if (limit := stopped()) is not None:
                raise _Stop(limit)
        else:
            calls.start_soon(answer, snapshot.call_id, function, snapshot.args, snapshot.kwargs)
        return await snapshot.resume({"future": ...})  # its future is settled already when it paused
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
