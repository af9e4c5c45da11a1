"""A program that used code mode ends cleanly: the sandbox library's runtime threads, which outlive
the pool, do not abort the interpreter's exit (`mcpstation.codemode._exit`). Real children that run
a script, close the pool and exit while such a thread is still inside Python (`exit_probe.py`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from exit_probe import NOT_HELD

PROBE = Path(__file__).with_name("exit_probe.py")
CHILDREN = 3
PROBE_TIMEOUT_S = 120.0  # three children, each starting a sandbox worker, on a loaded 2-core machine


def test_a_program_exits_cleanly_while_a_sandbox_runtime_thread_is_still_inside_python():
    done = subprocess.run(
        [sys.executable, str(PROBE), str(CHILDREN)], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    codes = [int(line) for line in done.stdout.split()]
    assert NOT_HELD not in codes, "no child held a runtime thread: the probe proved nothing"
    assert codes == [0] * CHILDREN, f"children's exit codes (-6: SIGABRT): {codes}\n{done.stderr}"
