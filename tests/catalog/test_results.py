import base64

import mcp_types as types

from mcpstation.catalog import CompletionResult, PromptResult, ResourceResult, SubscriptionResult, ToolResult
from mcpstation.outcomes import Outcome

PNG = base64.b64encode(b"\x89PNG" + b"\0" * 2044).decode()


def test_rendering_describes_binary_content_instead_of_dumping_it():
    raw = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="here"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.AudioContent(type="audio", data=PNG, mime_type="audio/wav"),
            types.ResourceLink(type="resource_link", name="doc", uri="file:///doc.md", mime_type="text/markdown"),
            types.EmbeddedResource(
                type="resource", resource=types.TextResourceContents(uri="demo://a", text="inline text")
            ),
            types.EmbeddedResource(
                type="resource", resource=types.BlobResourceContents(uri="demo://b", blob=PNG, mime_type="image/png")
            ),
        ]
    )
    result = ToolResult.from_sdk(raw, name="mcp_a_t", server="a", tool="t", duration_s=0.1)
    assert result.ok
    text = result.text
    assert "here" in text
    assert "[image: image/png, 2.0 KiB]" in text
    assert "[audio: audio/wav, 2.0 KiB]" in text
    assert "[resource link: doc <file:///doc.md>, text/markdown]" in text
    assert "inline text" in text
    assert "[resource <demo://b>: image/png, 2.0 KiB]" in text
    assert PNG not in text


def test_is_error_becomes_ok_false_with_the_servers_words():
    raw = types.CallToolResult(content=[types.TextContent(type="text", text="bad input")], is_error=True)
    result = ToolResult.from_sdk(raw, name="n", server="s", tool="t", duration_s=0.0)
    assert not result.ok and result.error == "bad input"
    assert result.to_dict()["error"] == "bad input"


def test_structured_only_result_renders_as_json():
    raw = types.CallToolResult(content=[], structured_content={"b": 2, "a": 1})
    result = ToolResult.from_sdk(raw, name="n", server="s", tool="t", duration_s=0.0)
    assert result.text == '{"a": 1, "b": 2}'


def test_failure_json_shape_has_the_contract_keys():
    data = ToolResult.failure("x", Outcome.NOT_FOUND, "no tool 'x'.").to_dict()
    assert set(data) >= {"ok", "text", "content", "structured", "server", "tool", "duration_s", "error"}
    assert data["ok"] is False and data["text"] == "Error: no tool 'x'."


def test_every_result_kind_carries_the_common_keys_in_its_json():
    results = [
        ToolResult(Outcome.OK, "mcp_a_t", "a", "t", duration_s=0.25),
        PromptResult(Outcome.OK, "mcp_a_p", "a", "p", duration_s=0.25),
        ResourceResult(Outcome.OK, "demo://x", "a", duration_s=0.25),
        CompletionResult(Outcome.OK, "mcp_a_p", "a", ("one",), duration_s=0.25),
        SubscriptionResult(Outcome.OK, "demo://x", "a", duration_s=0.25),
    ]
    for result in results:
        data = result.to_dict()
        name_key = "uri" if isinstance(result, ResourceResult | SubscriptionResult) else "name"
        assert {"ok", "outcome", name_key, "server", "duration_s", "error"} <= set(data), type(result)
        assert data["duration_s"] == 0.25 and data[name_key] == result.name, type(result)


def test_a_failure_of_each_kind_keeps_its_target_and_the_servers_own_error():
    upstream = types.ErrorData(code=-32602, message="no such widget")
    tool = ToolResult.failure("mcp_a_t", Outcome.REMOTE_ERROR, "bad", server="a", target="t", upstream_error=upstream)
    prompt = PromptResult.failure("mcp_a_p", Outcome.TIMEOUT, "slow", server="a", target="p", duration_s=1.5)
    assert (tool.tool, tool.upstream_error, tool.ok) == ("t", upstream, False)
    assert (prompt.prompt, prompt.duration_s, prompt.error) == ("p", 1.5, "slow")
    assert ResourceResult.failure("demo://x", Outcome.NOT_FOUND, "none").uri == "demo://x"
