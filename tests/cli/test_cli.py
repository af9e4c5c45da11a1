"""The `mcpstation` command as a user runs it: real subprocesses, real servers, exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _processes import alive, children_of
from fork_server import interpreter
from station_helpers import TINY_SERVER

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
TIMEOUT_S = 90  # one command; a test runs up to six, one after another
pytestmark = pytest.mark.timeout(6 * TIMEOUT_S)


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "mcpstation.toml"
    path.write_text(body)
    return path


DEMO = f"""
[station]
naming = "prefix"

[servers.demo]
command = "{PY}"
args = ["-m", "mcpstation.testing.demo_server"]
"""


# Where the command, not the server, is the subject: the stdlib tiny server starts in milliseconds.
TINY = DEMO.replace('args = ["-m", "mcpstation.testing.demo_server"]', f'args = ["{TINY_SERVER}"]')


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command as a script runs it: no terminal, no COLUMNS."""
    isolated = {"MCPSTATION_DATA_DIR": str(cwd / "data")}
    inherited = {k: v for k, v in os.environ.items() if k not in ("MCPSTATION_CONFIG", "COLUMNS", "LINES")}
    full_env = inherited | isolated | (env or {})
    return subprocess.run(
        [PY, "-m", "mcpstation", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=TIMEOUT_S
    )


def test_tools_list_json_has_the_contract_fields(tmp_path: Path):
    config = write_config(tmp_path, DEMO)
    done = run("--config", str(config), "tools", "list", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)
    add = next(t for t in tools if t["name"] == "mcp_demo_add")
    assert add["server"] == "demo" and add["tool"] == "add"
    assert add["description"] and add["input_schema"]["type"] == "object"


def test_call_json_shape_and_exit_codes(tmp_path: Path):
    config = write_config(tmp_path, DEMO)
    ok = run("--config", str(config), "call", "mcp_demo_add", "--args", '{"a": 2, "b": 5}', "--json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert set(data) >= {"ok", "text", "content", "structured", "server", "tool", "duration_s", "error"}
    assert data["ok"] is True and data["structured"] == {"result": 7}
    failed = run("--config", str(config), "call", "mcp_demo_fail", "--args", '{"message": "nope"}', cwd=tmp_path)
    assert failed.returncode == 4 and "nope" in failed.stdout
    unknown = run("--config", str(config), "--json", "call", "mcp_demo_nothing", cwd=tmp_path)
    assert unknown.returncode == 4 and json.loads(unknown.stdout)["ok"] is False
    bad_args = run("--config", str(config), "call", "mcp_demo_add", "--args", "{not json", cwd=tmp_path)
    assert bad_args.returncode == 2 and "not valid JSON" in bad_args.stderr


def test_status_json_shape(tmp_path: Path):
    config = write_config(tmp_path, DEMO)
    done = run("--config", str(config), "status", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    [server] = status["servers"]
    assert {
        "name",
        "state",
        "transport",
        "protocol_version",
        "tools",
        "prompts",
        "resources",
        "templates",
        "error",
    } <= set(server)
    assert server["state"] == "READY" and server["tools"] == 12
    assert status["conflicts"] == []


def test_prompt_get_and_resource_read(tmp_path: Path):
    config = write_config(tmp_path, DEMO)
    prompt = run("--config", str(config), "prompt", "get", "mcp_demo_greet", "--args", '{"name": "Lin"}', cwd=tmp_path)
    assert prompt.returncode == 0 and "Lin" in prompt.stdout
    resource = run("--config", str(config), "resource", "read", "demo://notes/3", "--json", cwd=tmp_path)
    assert resource.returncode == 0 and json.loads(resource.stdout)["contents"]
    missing = run("--config", str(config), "resource", "read", "nowhere://x", cwd=tmp_path)
    assert missing.returncode == 4


def test_bad_config_exits_2_naming_file_line_and_key(tmp_path: Path):
    config = write_config(tmp_path, DEMO + 'comand = "x"\n')
    done = run("--config", str(config), "status", cwd=tmp_path)
    assert done.returncode == 2
    assert "mcpstation.toml:" in done.stderr and "comand" in done.stderr and "command" in done.stderr


def test_no_server_reachable_exits_3(tmp_path: Path):
    config = write_config(tmp_path, '[servers.gone]\ncommand = "no-such-binary-for-mcpstation"\n')
    done = run("--config", str(config), "tools", "list", cwd=tmp_path)
    assert done.returncode == 3
    assert "no server reachable" in done.stderr and "command not found" in done.stderr


def test_status_exits_3_when_no_server_is_reachable_with_its_table_unsqueezed(tmp_path: Path):
    config = write_config(tmp_path, '[servers.gone]\ncommand = "no-such-binary-for-mcpstation"\n')
    done = run("--config", str(config), "status", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "no server reachable" in done.stderr
    [row] = [line for line in done.stdout.splitlines() if "gone" in line]  # one line: nothing folded
    assert "FAILED" in row and "no-such-binary-for-mcpstation" in row
    as_json = run("--config", str(config), "status", "--json", cwd=tmp_path)
    assert as_json.returncode == 3
    assert [s["state"] for s in json.loads(as_json.stdout)["servers"]] == ["FAILED"]


def test_trusted_static_config_warnings_are_said_once_until_they_change(tmp_path: Path):
    risky = TINY + 'env = { PYTHONPATH = "/nonexistent" }\n'
    config = write_config(tmp_path, risky)
    said = "static server 'demo': environment variable PYTHONPATH can change which code the program runs"

    def warned(*flags: str) -> bool:
        done = run("--config", str(config), *flags, "tools", "list", "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return said in done.stderr

    assert warned()
    assert not warned()  # said already for this config
    assert warned("-v")  # -v says it every time
    config.write_text(risky.replace("PYTHONPATH", "PYTHONSTARTUP"))  # what it says changed: said again
    said = said.replace("PYTHONPATH", "PYTHONSTARTUP")
    assert warned()


def test_config_is_found_in_the_working_directory_and_by_env(tmp_path: Path):
    write_config(tmp_path, TINY.replace("servers.demo", "servers.here"))
    done = run("tools", "list", "--json", cwd=tmp_path)
    assert done.returncode == 0 and any(t["server"] == "here" for t in json.loads(done.stdout))
    elsewhere = tmp_path / "other.toml"
    elsewhere.write_text(TINY.replace("servers.demo", "servers.viaenv"))
    done = run("tools", "list", "--json", cwd=tmp_path, env={"MCPSTATION_CONFIG": str(elsewhere)})
    assert done.returncode == 0 and any(t["server"] == "viaenv" for t in json.loads(done.stdout))


def test_default_config_starts_the_demo_server(tmp_path: Path):
    done = run("tools", "list", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "mcp_demo_add" in {t["name"] for t in json.loads(done.stdout)}


def test_up_stops_on_sigterm_with_no_child_left(tmp_path: Path):
    # The process tree is the subject: fresh interpreters, not forks of the fork server.
    config = write_config(tmp_path, DEMO.replace(PY, sys.executable))
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpstation", "--config", str(config), "up", "--port", "0"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        children: list[int] = []
        while time.monotonic() < deadline and not children:
            time.sleep(0.2)
            children = children_of(process.pid)
            if children and not _has_started(children):
                children = []
        assert children, "up never started its server"
        time.sleep(1.0)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "server 'demo' ready" in err
    assert "alembic" not in err  # the store's first migrations are said only under -v
    assert not [pid for pid in children if alive(pid)]


def _has_started(pids: list[int]) -> bool:
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmd:
                if b"demo_server" in cmd.read():
                    return True
        except OSError:
            continue
    return False


def test_up_watch_reloads_only_what_changed(tmp_path: Path):
    config = write_config(tmp_path, DEMO)
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}
    log = tmp_path / "up.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [PY, "-m", "mcpstation", "--config", str(config), "up", "--port", "0", "--watch"],
            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=sink, text=True,
        )  # fmt: skip
    try:
        _wait_for_text(log, "server 'demo' ready")
        time.sleep(1.1)  # a modification time the poller can tell apart
        config.write_text(
            DEMO + DEMO.replace('[station]\nnaming = "prefix"\n', "").replace("servers.demo", "servers.extra")
        )
        _wait_for_text(log, "config reloaded")
        text = log.read_text()
        assert "added extra" in text and "server 'extra' ready" in text
        assert "restarted" not in text.split("config reloaded")[-1]
        config.write_text(DEMO + "\n[servers.broken]\ncomand = 'x'\n")
        _wait_for_text(log, "config change ignored")
        assert "comand" in log.read_text()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0


def _wait_for_text(path: Path, text: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in path.read_text():
        assert time.monotonic() < deadline, f"{text!r} not seen in:\n{path.read_text()}"
        time.sleep(0.1)


ALLOW_PY = f"""
[policy]
allowed_dynamic_stdio_commands = ["{PY}"]
"""


def test_servers_add_persists_refuses_and_audits(tmp_path: Path):
    config = write_config(tmp_path, ALLOW_PY)
    base = ("--config", str(config))
    added = run(
        *base, "servers", "add", "extra", "--json", "--", PY, "-m", "mcpstation.testing.demo_server", cwd=tmp_path
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["message"] == "connected 'extra': 12 tools"
    refused = run(*base, "servers", "add", "evil", "--", "/bin/sh", "-c", "id", cwd=tmp_path)
    assert refused.returncode == 4 and "not in policy.allowed_dynamic_stdio_commands" in refused.stdout
    listed = json.loads(run(*base, "servers", "list", "--json", cwd=tmp_path).stdout)
    assert [(s["name"], s["origin"], s["state"]) for s in listed] == [("extra", "dynamic", "READY")]
    called = run(*base, "call", "mcp_extra_add", "--args", '{"a": 1, "b": 1}', cwd=tmp_path)
    assert called.returncode == 0
    audit = json.loads(run(*base, "audit", "--json", cwd=tmp_path).stdout)
    assert [(a["action"], a["server"]) for a in audit["actions"]] == [("add", "extra")]
    assert [(c["server"], c["tool"], c["outcome"]) for c in audit["calls"]] == [("extra", "add", "ok")]
    removed = run(*base, "servers", "remove", "extra", cwd=tmp_path)
    assert removed.returncode == 0 and "removed 'extra'" in removed.stdout


def test_token_create_prints_the_token_once(tmp_path: Path):
    done = run("token", "create", "--role", "user", "--name", "ci", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    token = json.loads(done.stdout)["token"]
    assert token.startswith("mcps_")
    database = (tmp_path / "data" / "mcpstation.db").read_bytes()
    assert token.encode() not in database


def test_servers_verbs_edit_a_server_file_in_place(tmp_path: Path):
    servers_file = tmp_path / "servers.toml"
    servers_file.write_text('# my servers\n[station]\nnaming = "bare"  # keep names short\n')
    add = run("servers", "add", "tester", "--config-file", str(servers_file), "--", "node", "server.cjs", cwd=tmp_path)
    assert add.returncode == 0, add.stderr + add.stdout
    off = run("servers", "disable", "tester", "--config-file", str(servers_file), cwd=tmp_path)
    assert off.returncode == 0
    text = servers_file.read_text()
    assert text.startswith('# my servers\n[station]\nnaming = "bare"  # keep names short\n')
    assert "[servers.tester]" in text and "enabled = false" in text
    listed = json.loads(run("servers", "list", "--config-file", str(servers_file), "--json", cwd=tmp_path).stdout)
    assert listed == [{"name": "tester", "enabled": False, "transport": "stdio", "target": "node server.cjs"}]


def test_concurrent_cli_edits_of_one_server_file_lose_nothing(tmp_path: Path):
    servers_file = tmp_path / "servers.json"
    servers_file.write_text('{"servers": []}')
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}
    processes = [
        subprocess.Popen(
            [PY, "-m", "mcpstation", "servers", "add", f"s{i}", "--config-file", str(servers_file), "--", "node", "x"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(8)
    ]
    for process in processes:
        _, err = process.communicate(timeout=TIMEOUT_S)
        assert process.returncode == 0, err
    ids = sorted(entry["id"] for entry in json.loads(servers_file.read_text())["servers"])
    assert ids == sorted(f"s{i}" for i in range(8))
