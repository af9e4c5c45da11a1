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
