import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fork_server import interpreter

HTTP_START_S = 30.0  # the demo server's start over HTTP on a loaded machine


@pytest.fixture
def http_demo(tmp_path: Path) -> Iterator[str]:
    """Our demo server in its own process over streamable HTTP on a free loopback port: its URL."""
    log = tmp_path / "http-demo.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [interpreter(), "-m", "mcpstation.testing.demo_server", "--transport", "http", "--port", "0"],
            stderr=sink,
        )
    try:
        deadline = time.monotonic() + HTTP_START_S
        while (found := re.search(r"listening on (\S+)", log.read_text(errors="replace"))) is None:
            assert time.monotonic() < deadline and process.poll() is None, log.read_text(errors="replace")
            time.sleep(0.05)
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(10)
