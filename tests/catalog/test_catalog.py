import mcp_types as types

from mcpstation.catalog import Catalog, ServerListing, anthropic_tools, openai_tools


def tool(name: str, schema: dict | None = None) -> types.Tool:
    return types.Tool(
        name=name, description=f"{name} tool", input_schema=schema if schema is not None else {"type": "object"}
    )


def listing(server: str, *tools: str, **kwargs) -> ServerListing:
    return ServerListing(server=server, tools=tuple(tool(t) for t in tools), **kwargs)


def test_bare_collision_keeps_first_in_config_order_and_reports_loser():
    catalog = Catalog.build([listing("a", "search"), listing("b", "search")], naming="bare")
    assert catalog.tools["search"].server == "a"
    [conflict] = catalog.conflicts
    assert (conflict.kind, conflict.server, conflict.winner) == ("tool", "b", "a")
    assert "already taken by server 'a'" in conflict.reason


def test_prefix_mode_keeps_both_servers_tools_apart():
    catalog = Catalog.build([listing("a", "search"), listing("b", "search")], naming="prefix")
    assert set(catalog.tools) == {"mcp_a_search", "mcp_b_search"}
    assert catalog.conflicts == ()
    assert catalog.tools["mcp_b_search"].tool == "search"


def test_namespace_collision_between_servers_sharing_a_namespace():
    catalog = Catalog.build(
        [listing("a", "read", namespace="fs"), listing("b", "read", namespace="fs")], naming="namespace"
    )
    assert list(catalog.tools) == ["fs__read"]
    assert catalog.conflicts[0].server == "b"


def test_reserved_names_can_never_be_taken():
    catalog = Catalog.build([listing("a", "reply", "stop", "ok")], naming="bare", reserved=["reply", "stop"])
    assert list(catalog.tools) == ["ok"]
    assert {c.original for c in catalog.conflicts} == {"reply", "stop"}
    assert all("reserved" in c.reason for c in catalog.conflicts)


def test_include_and_exclude_globs_filter_a_servers_tools():
    catalog = Catalog.build(
        [listing("a", "read_file", "write_file", "delete_file", include_tools=("*_file",), exclude_tools=("delete*",))],
        naming="bare",
    )
    assert sorted(catalog.tools) == ["read_file", "write_file"]


def test_missing_input_schema_becomes_an_empty_object_schema():
    raw = types.Tool.model_validate({"name": "t", "inputSchema": {}})
    catalog = Catalog.build([ServerListing(server="a", tools=(raw,))], naming="bare")
    assert catalog.tools["t"].input_schema == {"type": "object", "properties": {}}


def test_resources_and_templates_route_reads_and_detect_conflicts():
    res = types.Resource(name="r", uri="demo://readme")
    tpl = types.ResourceTemplate(name="n", uri_template="demo://notes/{id}")
    catalog = Catalog.build(
        [
            ServerListing(server="a", resources=(res,), templates=(tpl,)),
            ServerListing(server="b", resources=(res,), templates=(tpl,)),
        ],
        naming="prefix",
    )
    assert catalog.resource_owner("demo://readme") == "a"
    assert catalog.resource_owner("demo://notes/42") == "a"
    assert catalog.resource_owner("other://x") is None
    assert sorted(c.kind for c in catalog.conflicts) == ["resource", "template"]


def test_prompt_names_follow_the_naming_mode_and_collide_explicitly():
    prompt = types.Prompt(name="greet")
    catalog = Catalog.build(
        [ServerListing(server="a", prompts=(prompt,)), ServerListing(server="b", prompts=(prompt,))], naming="bare"
    )
    assert catalog.prompts["greet"].server == "a"
    assert catalog.conflicts[0].kind == "prompt"


def test_suggestions_for_a_misspelt_tool():
    catalog = Catalog.build([listing("github", "search_issues")], naming="prefix")
    assert catalog.suggest("mcp_gihub_search_issues") == ["mcp_github_search_issues"]


def test_function_calling_exports():
    catalog = Catalog.build([listing("a", "x")], naming="prefix")
    [oa] = openai_tools(catalog.tools.values())
    assert oa == {
        "type": "function",
        "function": {
            "name": "mcp_a_x",
            "description": "x tool",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        },
    }
    [an] = anthropic_tools(catalog.tools.values())
    assert an["name"] == "mcp_a_x" and an["input_schema"]["type"] == "object"
