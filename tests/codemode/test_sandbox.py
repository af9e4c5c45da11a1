"""Escape attempts: files, environment, imports, introspection, names the host never offered."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from codemode_helpers import MODEL, code_config
from station_helpers import inproc

from mcpstation import Station

pytestmark = pytest.mark.anyio

RUN_S = 90.0

ATTEMPTS = {
    "read a file": "open('/etc/passwd').read()",
    "read a file with pathlib": "from pathlib import Path\nPath('/etc/hostname').read_text()",
    "write a file": "open(ESCAPE, 'w').write('x')",
    "environment": "import os\nos.environ['HOME']",
    "getenv": "import os\nos.getenv('MCPSTATION_CODEMODE_SECRET')",
    "subprocess": "import subprocess\nsubprocess.run(['id'])",
    "socket": "import socket\nsocket.create_connection(('127.0.0.1', 9))",
    "urllib": "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9/')",
    "host module": "import mcpstation",
    "sys.modules": "import sys\nsys.modules",
    "__import__": "__import__('os').system('id')",
    "subclasses": "().__class__.__base__.__subclasses__()",
    "function globals": "def f():\n    pass\nf.__globals__",
    "frames": "import sys\nsys._getframe()",
    "builtins": "__builtins__.__dict__",
    "a name the host never offered": "station.call_tool('mcp_demo_add', {})",
    "a function the host never offered": "await run_shell('id')",
}


async def test_every_escape_attempt_fails_inside_the_sandbox(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("MCPSTATION_CODEMODE_SECRET", "s3cret")
    escaped = anyio.Path(tmp_path / "escaped")
    failures: dict[str, str] = {}
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"), type_check=False)) as station:
            for label, code in ATTEMPTS.items():
                code = code.replace("ESCAPE", repr(str(escaped)))
                result = await station.call_tool("mcp_run_code", {"code": code}, caller=MODEL)
                assert result.structured is not None
                if result.structured["ok"]:
                    failures[label] = repr(result.structured["value"])[:200]
                assert result.structured["calls"] == [], label
                assert "s3cret" not in (result.error or "") and "root:" not in (result.error or ""), label
            after = await station.call_tool("mcp_demo_add", {"a": 1, "b": 1}, caller=MODEL)
    assert failures == {}, f"these ran to completion in the sandbox: {failures}"
    assert not await escaped.exists()
    assert after.ok


async def test_names_the_type_checker_does_not_know_are_refused_before_anything_runs():
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"))) as station:
            result = await station.call_tool("mcp_run_code", {"code": "await run_shell('id')"}, caller=MODEL)
    assert result.structured is not None and result.structured["ending"] == "rejected"
    assert "unresolved-reference" in result.structured["error"]
