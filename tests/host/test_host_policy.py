"""Pure tests: capability decisions, sampling policy, schema defaults, config."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest
from host_helpers import RecordingLLM, ScriptedPerson

from mcpstation.config.loader import load_config
from mcpstation.config.models import RootSpec, StationConfig, StdioServerSpec
from mcpstation.errors import ConfigError
from mcpstation.host import (
    ElicitationAnswer,
    ElicitationModes,
    Host,
    OpenAICompatibleSampler,
    SamplingAnswer,
    SamplingPolicy,
    SamplingToolUse,
    apply_defaults,
)
from mcpstation.host.elicitation import Elicitor
from mcpstation.host.sampling import SamplingGate

pytestmark = pytest.mark.anyio

SEED001 = Path(__file__).parents[1] / "fixtures" / "configs" / "seed001.toml"


def spec(**fields: object) -> StdioServerSpec:
    return StdioServerSpec.model_validate({"name": "s", "command": "x", **fields})


def params(max_tokens: int = 10, **fields: object) -> types.CreateMessageRequestParams:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))
    return types.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens, **fields)  # type: ignore[arg-type]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- capabilities -----------------------------------------------------------------------------------


def test_only_capabilities_that_are_on_are_registered():
    bare = Host().client_kwargs(spec())
    assert set(bare) == {"logging_callback", "log_level"}  # nothing declared but logs

    full = Host(
        roots=[RootSpec(uri="file:///a")],
        sampling_handler=RecordingLLM(),
        sampling=SamplingPolicy(enabled=True, allow_tools=True),
        elicitation=ElicitationModes(form=True),
    ).client_kwargs(spec(log_level="error"))
    assert {"list_roots_callback", "sampling_callback", "elicitation_callback"} <= set(full)
    assert full["sampling_capabilities"].tools is not None
    assert full["log_level"] == "error"


def test_per_server_overrides_beat_the_host_defaults():
    host = Host(
        sampling_handler=RecordingLLM(),
        sampling=SamplingPolicy(enabled=False),
        elicitation=ElicitationModes(form=True, url=True),
    )
    on = host.client_kwargs(spec(sampling=True, elicitation_form=False, elicitation_url=False))
    assert "sampling_callback" in on and "elicitation_callback" not in on
    assert host.elicitation_modes_for(spec(elicitation_url=False)) == ElicitationModes(form=True, url=False)


def test_sampling_is_not_declared_without_a_handler_and_roots_not_without_an_enabled_root():
    host = Host(sampling=SamplingPolicy(enabled=True), roots=[RootSpec(uri="file:///a", enabled=False)])
    assert not {"sampling_callback", "list_roots_callback"} & set(host.client_kwargs(spec()))


def test_roots_must_be_file_uris():
    with pytest.raises(ValueError, match="not a file:// URI"):
        Host(roots=[RootSpec(uri="https://example.org/")])
    config = StationConfig.model_validate({"host": {"roots": [{"uri": "/home/me"}]}})
    with pytest.raises(ConfigError, match=r"host\.roots"):
        Host.from_config(config)


def test_from_config_reads_seed_001(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    monkeypatch.setenv("API_TOKEN", "t")
    config = load_config(SEED001)
    host = Host.from_config(config, sampling_handler=RecordingLLM(), elicitation_handler=ScriptedPerson())
    assert [r.uri for r in host.roots if r.enabled] == ["file:///home/bot/data"]
    assert host.sampling_policy.allow_tools and host.sampling_policy.enabled
    assert host.elicitation_modes == ElicitationModes(form=True, url=False)


def test_from_config_builds_the_openai_compatible_sampler_from_settings():
    config = StationConfig.model_validate(
        {"host": {"sampling": {"enabled": True, "base_url": "http://127.0.0.1:9/v1", "model": "m"}}}
    )
    host = Host.from_config(config)
    kwargs = host.client_kwargs(spec())
    assert "sampling_callback" in kwargs
    assert isinstance(host._sampling.handler, OpenAICompatibleSampler)  # type: ignore[union-attr]
    assert host._sampling.handler.url == "http://127.0.0.1:9/v1/chat/completions"  # type: ignore[union-attr]


def test_the_auth_seam_calls_the_factory_per_server():
    seen: list[str] = []

    def factory(server_spec: object) -> None:
        seen.append(server_spec.name)  # type: ignore[attr-defined]

    assert Host().http_auth(spec()) is None
    assert Host(auth_provider_factory=factory).http_auth(spec(name="gh")) is None and seen == ["gh"]


# -- sampling policy ------------------------------------------------------------------------------------


async def test_rate_limit_is_a_token_bucket_per_server():
    clock = Clock()
    llm = RecordingLLM()
    gate = SamplingGate(llm, SamplingPolicy(enabled=True, requests_per_minute=2), clock=clock)
    assert isinstance(await gate.sample("a", params()), types.CreateMessageResult)
    assert isinstance(await gate.sample("a", params()), types.CreateMessageResult)
    refused = await gate.sample("a", params())
    assert isinstance(refused, types.ErrorData) and "retry in 30.0 s" in refused.message
    assert isinstance(await gate.sample("b", params()), types.CreateMessageResult)  # its own bucket
    clock.now += 30
    assert isinstance(await gate.sample("a", params()), types.CreateMessageResult)
    assert len(llm.calls) == 4


async def test_tools_in_sampling_need_tool_support():
    llm = RecordingLLM()
    with_tools = params(tools=[types.Tool(name="t", input_schema={"type": "object"})])
    refused = await SamplingGate(llm, SamplingPolicy(enabled=True)).sample("a", with_tools)
    assert isinstance(refused, types.ErrorData) and "tool_support = true" in refused.message and not llm.calls

    async def uses_a_tool(server: str, request: object) -> SamplingAnswer:
        return SamplingAnswer(text="", model="m", tool_uses=(SamplingToolUse(id="1", name="t", input={"q": 1}),))

    allowed = await SamplingGate(uses_a_tool, SamplingPolicy(enabled=True, allow_tools=True)).sample("a", with_tools)
    assert isinstance(allowed, types.CreateMessageResultWithTools) and allowed.stop_reason == "toolUse"
    assert allowed.content_as_list == [types.ToolUseContent(id="1", name="t", input={"q": 1})]


async def test_a_failing_handler_becomes_an_error_for_the_server(caplog: pytest.LogCaptureFixture):
    async def broken(server: str, request: object) -> SamplingAnswer:
        raise RuntimeError("quota exhausted")

    result = await SamplingGate(broken, SamplingPolicy(enabled=True)).sample("a", params())
    assert isinstance(result, types.ErrorData) and "quota exhausted" in result.message


async def test_requests_reach_the_handler_as_our_own_types():
    llm = RecordingLLM()
    prefs = types.ModelPreferences(hints=[types.ModelHint(name="sonnet")])
    await SamplingGate(llm, SamplingPolicy(enabled=True)).sample(
        "a", params(max_tokens=7, system_prompt="be brief", temperature=0.2, model_preferences=prefs)
    )
    [(_, request)] = llm.calls
    assert (request.max_tokens, request.system_prompt, request.temperature) == (7, "be brief", 0.2)
    assert request.model_hints == ("sonnet",) and request.messages[0].role == "user"


# -- elicitation -----------------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "color": {"type": "string", "default": "blue"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["a"]},
        "age": {"type": "integer"},
    },
    "required": ["name"],
}


def test_defaults_fill_only_what_the_answer_left_out():
    assert apply_defaults(SCHEMA, {"name": "Ada", "color": "red"}) == {"name": "Ada", "color": "red", "tags": ["a"]}
    assert apply_defaults(SCHEMA, None) == {"color": "blue", "tags": ["a"]}
    assert apply_defaults({"type": "object"}, {"x": 1}) == {"x": 1}


async def test_an_accepted_form_without_content_gets_the_defaults():
    form = types.ElicitRequestFormParams(message="?", requested_schema=SCHEMA)
    result = await Elicitor(ScriptedPerson(ElicitationAnswer.accept())).elicit("s", ElicitationModes(form=True), form)
    assert result == types.ElicitResult(action="accept", content={"color": "blue", "tags": ["a"]})


async def test_no_handler_declines_and_a_disallowed_mode_is_refused():
    form = types.ElicitRequestFormParams(message="?", requested_schema=SCHEMA)
    url = types.ElicitRequestURLParams(message="go", url="https://example.org", elicitation_id="e")
    assert await Elicitor(None).elicit("s", ElicitationModes(form=True), form) == types.ElicitResult(action="decline")
    refused = await Elicitor(ScriptedPerson()).elicit("s", ElicitationModes(form=True), url)
    assert isinstance(refused, types.ErrorData) and "elicitation_url = true" in refused.message
