"""A prompt name or a completion reference that no listing holds goes to its owner when a rule makes
the owner clear (prompts: the naming prefix, the only server with prompts; completions of a
resource reference: a matching template, an earlier answer, the scheme, the only server that offers
completions), and is refused naming the candidates when none does. Real in-process servers that
answer any name or reference with their own name."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from prompt_server import PromptServer
from station_helpers import START_TIMEOUT_S, inproc

from mcpstation import Station, StationConfig
from mcpstation.config.models import Role
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Caller, Face

pytestmark = pytest.mark.anyio

ARGUMENT = {"name": "q", "value": ""}


@asynccontextmanager
async def station_of(
    *servers: PromptServer, naming: str = "bare", fields: Mapping[str, Mapping[str, Any]] | None = None
) -> AsyncIterator[Station]:
    """`fields`: more config fields of a server, by its name."""
    specs = [inproc(s.name, server=s.server, **(fields or {}).get(s.name, {})) for s in servers]
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=specs, station={"naming": naming})) as station:
            yield station


def prompt(name: str) -> types.PromptReference:
    return types.PromptReference(type="ref/prompt", name=name)


def resource(uri: str) -> types.ResourceTemplateReference:
    return types.ResourceTemplateReference(type="ref/resource", uri=uri)


async def test_the_naming_prefix_names_the_owner_of_a_prompt_no_listing_holds() -> None:
    alpha = PromptServer("alpha", prompts=("greet",), completions=True)
    beta = PromptServer("beta", prompts=("greet",), completions=True)
    async with station_of(alpha, beta, naming="prefix") as station:
        got = await station.get_prompt("mcp_beta_secret")
        assert got.ok and got.server == "beta" and got.prompt == "secret", got
        completed = await station.complete(prompt("mcp_alpha_secret"), ARGUMENT)
        assert completed.ok and completed.values == ("alpha",), completed
        listed = await station.get_prompt("mcp_alpha_greet")
        assert listed.ok and listed.server == "alpha"
    assert beta.gets == ["secret"] and alpha.gets == ["greet"] and alpha.completed == ["secret"]


async def test_the_only_server_with_prompts_takes_a_prompt_no_listing_holds() -> None:
    alpha = PromptServer("alpha", prompts=(), completions=True)
    beta = PromptServer("beta", template="notes://{id}", completions=True)  # no prompts at all
    async with station_of(alpha, beta) as station:
        got = await station.get_prompt("made_at_run_time")
        assert got.ok and got.server == "alpha" and got.prompt == "made_at_run_time", got
        completed = await station.complete(prompt("made_at_run_time"), ARGUMENT)
        assert completed.ok and completed.values == ("alpha",)
    assert alpha.gets == ["made_at_run_time"] and alpha.completed == ["made_at_run_time"] and beta.completed == []


async def test_an_unclear_prompt_owner_is_refused_naming_the_candidates() -> None:
    alpha = PromptServer("alpha", prompts=("greet",), completions=True)
    beta = PromptServer("beta", prompts=("greet",), completions=True)
    async with station_of(alpha, beta) as station:
        got = await station.get_prompt("secret")
        assert got.outcome is Outcome.NOT_FOUND, got
        assert "its owner is not clear" in (got.error or "") and "'alpha', 'beta'" in (got.error or "")
        assert "offer prompts" in (got.error or "")
        completed = await station.complete(prompt("secret"), ARGUMENT)
        assert completed.outcome is Outcome.NOT_FOUND and "'alpha', 'beta'" in (completed.error or "")
    team = {"namespace": "team"}
    async with station_of(alpha, beta, naming="namespace", fields={"alpha": team, "beta": team}) as station:
        shared = await station.get_prompt("team__secret")  # one namespace, two servers: the name says no more
        assert shared.outcome is Outcome.NOT_FOUND and "share its name prefix" in (shared.error or ""), shared
    assert alpha.gets == beta.gets == [] and alpha.completed == beta.completed == []


async def test_a_prompt_of_a_server_the_caller_may_not_see_is_not_found() -> None:
    alpha = PromptServer("alpha", prompts=("greet",))
    ops = PromptServer("ops", prompts=("greet",))
    user = Caller.token("alice", Role.USER, Face.HTTP_API)
    async with station_of(alpha, ops, naming="prefix", fields={"ops": {"min_role": "admin"}}) as station:
        hidden = await station.get_prompt("mcp_ops_secret", caller=user)
        assert hidden.outcome is Outcome.NOT_FOUND and hidden.server is None, hidden
        assert hidden.error == "no prompt 'mcp_ops_secret'. Did you mean 'mcp_alpha_greet'?"  # never ops' own
        assert (await station.get_prompt("mcp_ops_secret")).server == "ops"  # the local admin sees it
    async with station_of(alpha, ops, fields={"ops": {"min_role": "admin"}}) as station:
        only = await station.get_prompt("secret", caller=user)  # ops cannot be a candidate for this caller
        assert only.ok and only.server == "alpha", only
    assert ops.gets == ["secret"] and alpha.gets == ["secret"]


async def test_a_template_names_the_owner_of_a_completion_for_a_uri_no_listing_holds() -> None:
    alpha = PromptServer("alpha", template="notes://{id}", completions=True)
    beta = PromptServer("beta", template="files://{id}", completions=True)
    async with station_of(alpha, beta) as station:
        by_uri = await station.complete(resource("notes://42"), ARGUMENT)
        assert by_uri.ok and by_uri.values == ("alpha",), by_uri
        listed = await station.complete(resource("files://{id}"), ARGUMENT)  # the listed template itself
        assert listed.ok and listed.values == ("beta",)
    assert alpha.completed == ["notes://42"] and beta.completed == ["files://{id}"]


async def test_the_scheme_names_the_owner_of_a_completion_when_only_one_server_uses_it() -> None:
    alpha = PromptServer("alpha", template="alpha://{id}", completions=True)
    beta = PromptServer("beta", template="beta://{id}", completions=True)
    async with station_of(alpha, beta) as station:
        completed = await station.complete(resource("beta://deep/{path}"), ARGUMENT)  # no template matches
        assert completed.ok and completed.values == ("beta",), completed
    assert beta.completed == ["beta://deep/{path}"] and alpha.completed == []


async def test_the_only_server_that_offers_completions_takes_one_for_a_uri_no_listing_holds() -> None:
    alpha = PromptServer("alpha", resources=True, completions=True)
    beta = PromptServer("beta", resources=True)
    async with station_of(alpha, beta) as station:
        completed = await station.complete(resource("mystery://{q}"), ARGUMENT)
        assert completed.ok and completed.values == ("alpha",), completed


async def test_an_unclear_completion_owner_is_refused_until_a_server_has_answered_for_the_uri() -> None:
    alpha = PromptServer("alpha", resources=True, completions=True)
    beta = PromptServer("beta", completions=True)  # completes, but reads nothing
    async with station_of(alpha, beta) as station:
        unclear = await station.complete(resource("made://x"), ARGUMENT)
        assert unclear.outcome is Outcome.NOT_FOUND, unclear
        assert "'alpha', 'beta'" in (unclear.error or "") and "offer completions" in (unclear.error or "")
        assert (await station.read_resource("made://x")).server == "alpha"  # alpha alone offers resources
        answered = await station.complete(resource("made://x"), ARGUMENT)  # ... and has answered for it
        assert answered.ok and answered.values == ("alpha",), answered
    assert alpha.completed == ["made://x"] and beta.completed == []
