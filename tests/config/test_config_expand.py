"""`${VAR}` expansion: set, default, missing, `$$`, nested values; keys untouched."""

from __future__ import annotations

import pytest

from mcpstation.config import StdioServerSpec, parse_config
from mcpstation.config._expand import expand
from mcpstation.errors import ConfigError, MissingVariablesError


def test_set_variable_and_default() -> None:
    data = {"a": "${HOME_DIR}/x", "b": "${UNSET:-fallback}", "c": "${EMPTY:-used}", "d": "${EMPTY}"}
    env = {"HOME_DIR": "/home/me", "EMPTY": ""}
    assert expand(data, env) == {"a": "/home/me/x", "b": "fallback", "c": "used", "d": ""}


def test_dollar_dollar_is_a_literal_dollar() -> None:
    assert expand({"a": "cost $$5 and $${NOT}", "b": "lone $ sign"}, {}) == {
        "a": "cost $5 and ${NOT}",
        "b": "lone $ sign",
    }


def test_lists_and_nested_tables_are_expanded_but_keys_are_not() -> None:
    data = {"${KEY}": {"args": ["--token", "${T}"], "deep": [{"x": "${T}"}]}, "n": 3, "flag": True}
    assert expand(data, {"T": "v", "KEY": "k"}) == {
        "${KEY}": {"args": ["--token", "v"], "deep": [{"x": "v"}]},
        "n": 3,
        "flag": True,
    }


def test_every_missing_variable_is_reported_at_once() -> None:
    text = '[servers.a]\ncommand = "${CMD}"\nargs = ["${ARG_ONE}", "${ARG_TWO}"]\nenv = { K = "${CMD}" }\n'
    with pytest.raises(MissingVariablesError) as caught:
        parse_config(text, fmt="toml", source="mcpstation.toml", environ={})
    assert caught.value.names == ("ARG_ONE", "ARG_TWO", "CMD")
    assert "ARG_ONE, ARG_TWO, CMD" in str(caught.value)
    assert str(caught.value).startswith("mcpstation.toml")


def test_a_server_whose_variables_have_no_value_is_listed_not_run_and_the_others_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    text = (
        '[servers.time]\ncommand = "mcp-server-time"\n'
        '[servers.github]\ncommand = "npx"\nargs = ["-y", "@modelcontextprotocol/server-github"]\n'
        'env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_TOKEN}" }\n'
        '[servers.remote]\nurl = "https://${REMOTE_HOST}/mcp"\n'
    )
    config = parse_config(text, fmt="toml", source="mcpstation.toml", environ={})
    time, github, remote = config.server("time"), config.server("github"), config.server("remote")
    assert time.enabled and time.unusable is None
    assert not github.enabled and github.unusable == "environment variable(s) not set: GITHUB_TOKEN."
    assert isinstance(github, StdioServerSpec) and github.command == "npx"
    assert not remote.enabled and remote.unusable == "environment variable(s) not set: REMOTE_HOST."
    assert any("'github' cannot run and is left out" in record.getMessage() for record in caplog.records)


def test_missing_variables_outside_the_servers_or_in_every_server_refuse_the_file() -> None:
    station = '[station]\nnaming = "${NAMING}"\n[servers.a]\ncommand = "a"\n[servers.b]\ncommand = "${B}"\n'
    with pytest.raises(MissingVariablesError) as caught:
        parse_config(station, fmt="toml", environ={})
    assert caught.value.names == ("B", "NAMING")
    every = '[servers.a]\ncommand = "${A}"\n[servers.b]\ncommand = "b"\nenabled = false\n'
    with pytest.raises(MissingVariablesError, match="A"):
        parse_config(every, fmt="toml", environ={})


def test_expanded_values_reach_the_specs() -> None:
    text = '[servers.a]\ncommand = "${CMD:-uvx}"\nargs = ["${PKG}"]\n'
    spec = parse_config(text, fmt="toml", environ={"PKG": "mcp-server-time"}).server("a")
    assert isinstance(spec, StdioServerSpec)
    assert (spec.command, spec.args) == ("uvx", ("mcp-server-time",))


def test_malformed_reference_names_its_line() -> None:
    text = '[servers.a]\ncommand = "${1BAD}"\n'
    with pytest.raises(ConfigError) as caught:
        parse_config(text, fmt="toml", source="c.toml", environ={})
    assert str(caught.value).startswith("c.toml:2: servers.a.command: malformed variable reference")
