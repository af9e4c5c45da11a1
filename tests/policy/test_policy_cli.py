"""`mcpstation policy url|command`: JSON shapes and exit codes; no DNS (literals or a patched resolver)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mcpstation.cli import _runner
from mcpstation.cli.policy import policy_app
from mcpstation.policy import urls

runner = CliRunner()


@pytest.fixture(autouse=True)
def no_config_around(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`policy command` reads ./mcpstation.toml or $MCPSTATION_CONFIG: none here unless a test writes one."""
    monkeypatch.delenv("MCPSTATION_CONFIG", raising=False)
    monkeypatch.setattr(_runner._globals, "config_path", None)  # a `--config` an earlier invocation left
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def no_real_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {"example.com": ["93.184.216.34"], "internal.test": ["10.0.0.7"]}

    def fake(host: str) -> list[str]:
        if host not in table:
            raise OSError(host)
        return table[host]

    monkeypatch.setattr(urls, "system_resolver", fake)


def test_url_single_prints_one_object_and_exits_1_when_refused() -> None:
    result = runner.invoke(policy_app, ["url", "http://127.1/", "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data == {
        "url": "http://127.1/",
        "allowed": False,
        "reason": "address 127.0.0.1, which is loopback",
        "addresses": ["127.0.0.1"],
    }


def test_url_several_print_a_list_and_exit_0_when_all_allowed() -> None:
    result = runner.invoke(policy_app, ["url", "http://example.com/", "https://8.8.8.8/", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [d["allowed"] for d in data] == [True, True]
    assert data[0]["addresses"] == ["93.184.216.34"]


def test_url_mixed_exits_1() -> None:
    result = runner.invoke(policy_app, ["url", "http://example.com/", "http://internal.test/", "--json"])
    assert result.exit_code == 1
    assert [d["allowed"] for d in json.loads(result.stdout)] == [True, False]


def test_url_for_server_admits_websockets_and_fetch_does_not() -> None:
    assert runner.invoke(policy_app, ["url", "wss://example.com/ws", "--for", "server"]).exit_code == 0
    assert runner.invoke(policy_app, ["url", "wss://example.com/ws"]).exit_code == 1
    assert runner.invoke(policy_app, ["url", "wss://example.com/ws", "--for", "nope"]).exit_code == 2


def test_url_human_output_names_the_reason() -> None:
    result = runner.invoke(policy_app, ["url", "http://169.254.169.254/"])
    assert result.exit_code == 1
    assert "refused" in result.stdout and "cloud metadata" in result.stdout


def test_url_allow_options_are_explicit_exceptions() -> None:
    assert runner.invoke(policy_app, ["url", "http://127.0.0.1:9/", "--allow-host", "127.0.0.1"]).exit_code == 0
    assert runner.invoke(policy_app, ["url", "http://internal.test/", "--allow-cidr", "10.0.0.0/8"]).exit_code == 0


@pytest.mark.parametrize(
    ("argv", "code", "verdict"),
    [
        (["command", "--json", "--", "python", "-m", "mcpstation.servers.fetch"], 0, "allow"),
        (["command", "--json", "--", "npx", "-y", "some-server"], 1, "confirm"),
        (["command", "--json", "--", "bash", "-c", "id"], 2, "deny"),
        (["command", "--json", "--env", "LD_PRELOAD=/tmp/x.so", "--", "mystery"], 2, "deny"),
        (["command", "--json", "--allow-package", "some-server", "--", "npx", "-y", "some-server"], 0, "allow"),
    ],
)
def test_command_prints_verdict_and_exit_code(argv: list[str], code: int, verdict: str) -> None:
    result = runner.invoke(policy_app, argv)
    assert result.exit_code == code, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == verdict and data["reason"] and data["rule"]


def test_command_reads_allowed_packages_from_the_config_and_adds_the_flags(tmp_path: Path) -> None:
    (tmp_path / "mcpstation.toml").write_text('[policy]\nallowed_packages = ["some-server"]\n')
    assert runner.invoke(policy_app, ["command", "--", "npx", "-y", "some-server"]).exit_code == 0
    assert runner.invoke(policy_app, ["command", "--", "npx", "-y", "other-server"]).exit_code == 1
    flagged = runner.invoke(
        policy_app, ["command", "--allow-package", "other-server", "--", "npx", "-y", "other-server"]
    )
    assert flagged.exit_code == 0


def test_command_runtime_judges_as_servers_add_would(tmp_path: Path) -> None:
    (tmp_path / "mcpstation.toml").write_text('[policy]\nallowed_dynamic_stdio_commands = ["npx", "python"]\n')
    listed = runner.invoke(policy_app, ["command", "--runtime", "--json", "--", "npx", "-y", "some-server"])
    assert listed.exit_code == 1 and json.loads(listed.stdout)["rule"] == "package_not_allowed"
    unlisted = runner.invoke(policy_app, ["command", "--runtime", "--json", "--", "uvx", "some-server"])
    assert unlisted.exit_code == 2 and json.loads(unlisted.stdout)["rule"] == "command_not_listed"
    static = runner.invoke(policy_app, ["command", "--json", "--", "uvx", "some-server"])
    assert static.exit_code == 1


def test_command_with_a_broken_config_or_entry_says_so(tmp_path: Path) -> None:
    assert runner.invoke(policy_app, ["command", "--allow-package", "git+https://x", "--", "npx", "x"]).exit_code == 2
    (tmp_path / "mcpstation.toml").write_text('[policy]\nallowed_packages = ["../x"]\n')
    result = runner.invoke(policy_app, ["command", "--", "npx", "x"])
    assert result.exit_code == 2 and "allowed_packages" in result.output


def test_command_rejects_a_malformed_env() -> None:
    assert runner.invoke(policy_app, ["command", "--env", "NOEQUALS", "--", "x"]).exit_code == 2


def test_policy_app_mounts_under_a_parent_app() -> None:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """A stand-in for the station's app."""

    app.add_typer(policy_app, name="policy")
    result = runner.invoke(app, ["policy", "command", "--", "sh", "-c", "x"])
    assert result.exit_code == 2
    assert "deny" in result.stdout
    result = runner.invoke(app, ["policy", "url", "http://localhost/", "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["allowed"] is False


def test_command_runtime_judges_what_an_allowlisted_package_is_handed(tmp_path: Path) -> None:
    (tmp_path / "mcpstation.toml").write_text(
        '[policy]\nallowed_dynamic_stdio_commands = ["uvx"]\nallowed_packages = ["mcp-server-fetch"]\n'
    )
    secret = ["command", "--runtime", "--json", "-e", "API_KEY=${OPENAI_API_KEY}", "--", "uvx", "mcp-server-fetch"]
    refused = runner.invoke(policy_app, secret)
    assert refused.exit_code == 2 and json.loads(refused.stdout)["rule"] == "host_variable"
    proxy = ["command", "--runtime", "--json", "-e", "HTTPS_PROXY=http://proxy.attacker.example:8080", "--", "uvx",
             "mcp-server-fetch"]  # fmt: skip
    held = runner.invoke(policy_app, proxy)
    assert held.exit_code == 1 and json.loads(held.stdout)["rule"] == "transport_env"
    plain = runner.invoke(policy_app, ["command", "--runtime", "--json", "--", "uvx", "mcp-server-fetch"])
    assert plain.exit_code == 0 and json.loads(plain.stdout)["rule"] == "allowed_package"
