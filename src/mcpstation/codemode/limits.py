"""The limits of one run, and the budget the host keeps for those the sandbox cannot see.

The sandbox enforces CPU time, memory and recursion itself (`_monty.py` hands it the numbers).
The host keeps the rest: wall time (tool calls included), the number of tool calls (checked
before each is dispatched, so a call over budget is never started), the bytes of results taken
in and of output handed back.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from mcpstation.config.models import CodeModeSettings


class Limit(enum.StrEnum):
    """Which limit ended a run."""

    WALL_TIME = "wall_time"
    CPU_TIME = "cpu_time"
    MEMORY = "memory"
    RECURSION = "recursion"
    TOOL_CALLS = "tool_calls"
    RESULT_BYTES = "result_bytes"
    OUTPUT_BYTES = "output_bytes"

    def describe(self, settings: CodeModeSettings) -> str:
        """`the run's 5 tool calls were used up`: what was exceeded, with its configured bound."""
        bound = {
            Limit.WALL_TIME: f"{settings.timeout_s:g} s of wall time",
            Limit.CPU_TIME: f"{settings.cpu_s:g} s of sandbox execution time",
            Limit.MEMORY: f"{settings.max_memory_bytes} bytes of memory",
            Limit.RECURSION: f"a recursion depth of {settings.max_recursion_depth}",
            Limit.TOOL_CALLS: f"{settings.max_tool_calls} tool calls",
            Limit.RESULT_BYTES: f"{settings.max_result_bytes} bytes of tool results",
            Limit.OUTPUT_BYTES: f"{settings.max_output_bytes} bytes of output",
        }[self]
        return f"the run went over its limit of {bound} ([code_mode] in the config)"


@dataclass
class Budget:
    """What one run has used of the limits the host keeps."""

    settings: CodeModeSettings
    calls: int = 0
    result_bytes: int = 0
    output: list[str] = field(default_factory=list)
    output_bytes: int = 0
    exceeded: Limit | None = None

    def admit_call(self) -> Limit | None:
        """Count a call about to be dispatched, or the limit that refuses it (then it is not started)."""
        if self.exceeded is not None:
            return self.exceeded
        if self.calls >= self.settings.max_tool_calls:
            self.exceeded = Limit.TOOL_CALLS
            return self.exceeded
        self.calls += 1
        return None

    def stop(self, limit: Limit) -> None:
        """Note a limit the host saw (the first one counts); the run ends at its next step."""
        if self.exceeded is None:
            self.exceeded = limit

    def take_result(self, size: int) -> Limit | None:
        """Count `size` bytes of a result reaching the script, or the limit they cross."""
        self.result_bytes += size
        if self.result_bytes > self.settings.max_result_bytes and self.exceeded is None:
            self.exceeded = Limit.RESULT_BYTES
        return self.exceeded

    def take_output(self, text: str) -> None:
        """Keep printed text up to the output limit; past it the rest is dropped and the run will fail."""
        size = len(text.encode())
        room = self.settings.max_output_bytes - self.output_bytes
        if size > room:
            if room > 0:
                self.output.append(text.encode()[:room].decode(errors="ignore"))
            self.output_bytes = self.settings.max_output_bytes
            if self.exceeded is None:
                self.exceeded = Limit.OUTPUT_BYTES
            return
        self.output.append(text)
        self.output_bytes += size
