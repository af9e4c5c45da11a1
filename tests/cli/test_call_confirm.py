"""`mcpstation call` of a confirm-tier tool (`[policy] confirm_tools`): on a terminal the person is
asked y/N and the call runs or is refused by the answer, whether the command starts a station of
its own or goes through the running one (`mcpstation up`, its control socket); with no terminal it
is refused, saying how to allow it. The real CLI in its own process on a pseudo-terminal (forked
from the fork server: the terminal is the subject, not the interpreter's start-up), a real stdio
server behind it."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fork_server import interpreter

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
TIMEOUT_S = 180.0  # one command on a loaded 2-core machine
COUNTED = Path(__file__).with_name("counted_server.py")
QUESTION = "Allow it? [y/N]: "
SERVING = b"serving the console at http://127.0.0.1:"  # what `up` logs once it serves, control socket included
THROUGH_THE_STATION = "talking to the station running for"  # what `call -v` logs when a station runs
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


class Project:
    """Counted server `a` (tools `add`, `sub`) whose `add` needs a person's yes, with its own data directory."""

    def __init__(self, root: Path, *, confirm_timeout_s: float = 120.0) -> None:
        self.root = root
        self.config = root / "mcpstation.toml"
        (root / "a.tools").write_text("add sub")
        args = [str(COUNTED), str(root / "a.starts"), str(root / "a.tools")]
        self.config.write_text(
            f'[station]\nnaming = "prefix"\n\n[policy]\nconfirm_tools = ["a/add"]\n'
            f"confirm_timeout_s = {confirm_timeout_s}\n\n"
            f'[servers.a]\ncommand = "{sys.executable}"\nargs = {json.dumps(args)}\n'
        )
        self.env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"}
        self.env["MCPSTATION_DATA_DIR"] = str(root / "data")

    def argv(self, *args: str) -> list[str]:
        return [PY, "-m", "mcpstation", "--config", str(self.config), *args]

    def starts(self) -> int:
        return (self.root / "a.starts").read_text().split().count("started")

    @contextmanager
    def running_station(self) -> Iterator[None]:
        """`mcpstation up` on this project's data directory, serving until the block ends (then SIGTERM)."""
        process = subprocess.Popen(
            self.argv("up", "--port", "0"), cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert process.stderr is not None
        said, deadline = b"", time.monotonic() + TIMEOUT_S
        try:
            while SERVING not in said:
                left = deadline - time.monotonic()
                assert left > 0, f"`up` did not serve in {TIMEOUT_S} s; it said: {said.decode(errors='replace')}"
                readable, _, _ = select.select([process.stderr], [], [], left)
                chunk = os.read(process.stderr.fileno(), 4096) if readable else b""
                assert chunk or not readable, f"`up` exited: {said.decode(errors='replace')}"
                said += chunk
            yield
        finally:
            process.terminate()
            _, rest = process.communicate(timeout=TIMEOUT_S)
        assert process.returncode == 0, (said + rest).decode(errors="replace")

    def calls(self) -> list[str]:
        path = self.root / "a.starts.calls"
        return path.read_text().split() if path.exists() else []

    def on_terminal(self, answer: str | None, *args: str) -> tuple[int, str]:
        """Run the command with a pseudo-terminal as stdin, stdout and stderr; type `answer` and Enter
        when it asks (None: type nothing). Its exit code and everything it wrote, without colour codes."""
        main, side = os.openpty()
        fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # no wrapped lines
        process = subprocess.Popen(self.argv(*args), cwd=self.root, env=self.env, stdin=side, stdout=side, stderr=side)
        os.close(side)
        seen, answered = b"", False
        deadline = time.monotonic() + TIMEOUT_S
        try:
            while True:
                left = deadline - time.monotonic()
                assert left > 0, f"no end in {TIMEOUT_S} s; wrote: {seen.decode(errors='replace')!r}"
                readable, _, _ = select.select([main], [], [], left)
                if not readable:
                    continue
                try:
                    chunk = os.read(main, 4096)
                except OSError as exc:  # EIO: every holder of the terminal's other end has closed it
                    if exc.errno != errno.EIO:
                        raise
                    chunk = b""
                if not chunk:
                    break
                seen += chunk
                if answer is not None and not answered and QUESTION.encode() in seen:
                    os.write(main, f"{answer}\n".encode())
                    answered = True
            code = process.wait(TIMEOUT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            os.close(main)
        assert answered or answer is None, f"the command never asked; wrote: {seen.decode(errors='replace')!r}"
        return code, ANSI.sub("", seen.decode(errors="replace"))


def test_a_yes_on_the_terminal_runs_the_call(tmp_path: Path):
    project = Project(tmp_path)
    code, wrote = project.on_terminal("y", "call", "mcp_a_add")
    assert code == 0, wrote
    assert "Run 'mcp_a_add' (server 'a') for " in wrote and "with {}?" in wrote
    assert wrote.rstrip().endswith("ran add")
    assert project.calls() == ["add"]


def test_a_no_or_just_enter_on_the_terminal_refuses_the_call(tmp_path: Path):
    project = Project(tmp_path)
    for answer in ("n", ""):
        code, wrote = project.on_terminal(answer, "call", "mcp_a_add")
        assert code == 4, wrote
        assert "needs a person's confirmation, and the call was declined" in wrote
        assert "ran add" not in wrote
    code, wrote = project.on_terminal(None, "call", "mcp_a_sub")  # a tool not in the tier: nobody is asked
    assert code == 0 and QUESTION not in wrote and wrote.rstrip().endswith("ran sub"), wrote
    assert project.calls() == ["sub"]


def test_no_answer_on_the_terminal_in_time_refuses_the_call_and_the_command_ends(tmp_path: Path):
    project = Project(tmp_path, confirm_timeout_s=3.0)
    code, wrote = project.on_terminal(None, "call", "mcp_a_add")
    assert code == 4 and QUESTION in wrote, wrote
    assert "(no answer)" in wrote and "needs a person's confirmation; nobody answered in 3 s" in wrote
    assert project.calls() == []


def test_without_a_terminal_the_call_is_refused_saying_how_to_allow_it(tmp_path: Path):
    project = Project(tmp_path)
    done = subprocess.run(
        project.argv("call", "mcp_a_add", "--json"),
        cwd=tmp_path, env=project.env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    result = json.loads(done.stdout)
    assert (result["outcome"], result["structured"]["confirmation"]) == ("refused", "unaskable")
    assert "needs a person's confirmation before each call, and this caller cannot be asked" in result["error"]
    assert "Fix: run `mcpstation call ...` on a terminal, which asks there (y/N)" in result["error"]
    assert "remove it from [policy] confirm_tools" in result["error"]
    assert QUESTION not in done.stderr
    assert project.calls() == []


def test_through_the_running_station_a_yes_on_the_terminal_runs_the_call(tmp_path: Path):
    project = Project(tmp_path)
    with project.running_station():
        code, wrote = project.on_terminal("y", "-v", "call", "mcp_a_add")
    assert code == 0, wrote
    assert THROUGH_THE_STATION in wrote and "Run 'mcp_a_add' (server 'a') for cli with {}?" in wrote
    assert wrote.rstrip().endswith("ran add")
    assert project.calls() == ["add"] and project.starts() == 1  # the running station's server ran it


def test_through_the_running_station_a_no_on_the_terminal_refuses_the_call(tmp_path: Path):
    project = Project(tmp_path)
    with project.running_station():
        code, wrote = project.on_terminal("n", "-v", "call", "mcp_a_add")
        assert code == 4, wrote
        assert THROUGH_THE_STATION in wrote and QUESTION in wrote
        assert "needs a person's confirmation, and the call was declined" in wrote and "ran add" not in wrote
        done = subprocess.run(
            project.argv("call", "mcp_a_add", "--json"),
            cwd=tmp_path, env=project.env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT_S,
        )  # fmt: skip
    assert done.returncode == 4, done.stderr  # no terminal: the running station refuses it as before, unasked
    assert json.loads(done.stdout)["structured"]["confirmation"] == "unaskable"
    assert project.calls() == [] and project.starts() == 1
