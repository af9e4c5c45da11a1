"""Run the `mcpstation` command in a fresh interpreter and report which modules it loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

_PROBE = (
    "import json, sys\n"
    "modules_file, sys.argv = sys.argv[1], ['mcpstation', *sys.argv[2:]]\n"
    "from mcpstation.cli import main\n"
    "try:\n    main()\n"
    "except SystemExit:\n    pass\n"
    "with open(modules_file, 'w') as f:\n    json.dump(sorted(sys.modules), f)\n"
)


def run_loading(
    args: list[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`mcpstation ARGS` as a script runs it, and the names of every module loaded by its end."""
    with tempfile.TemporaryDirectory(prefix="mcps-probe-") as scratch:
        modules_file = Path(scratch, "modules.json")
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, str(modules_file), *args],
            cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout_s,
        )  # fmt: skip
        loaded = set(json.loads(modules_file.read_text())) if modules_file.exists() else set()
    return done, loaded


def under(loaded: set[str], packages: Iterable[str]) -> set[str]:
    """The loaded modules that are one of `packages` or inside one."""
    return {m for m in loaded for p in packages if m == p or m.startswith(p + ".")}
