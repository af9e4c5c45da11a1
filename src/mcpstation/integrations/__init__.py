"""The station's tools in the frameworks and provider APIs agents are built with.

Each adapter is its own module, imported by name, and needs only its own framework:

- `mcpstation.integrations.pydantic_ai.station_toolset(station)`: a pydantic-ai toolset (extra `pydantic-ai`)
- `mcpstation.integrations.openai_agents.station_tools(station)`: OpenAI Agents SDK tools (extra `openai-agents`)
- `mcpstation.integrations.langchain.station_tools(station)`: LangChain tools (extra `langchain`)
- `mcpstation.integrations.openai`: `tools()` and `run_tool_calls()` for Chat Completions and Responses
- `mcpstation.integrations.anthropic`: `tools()` and `run_tool_uses()` for the Messages API
- `mcpstation.integrations.gemini`: `tools()` and `run_function_calls()` for Gemini (google-genai or REST)
- `mcpstation.integrations.otel`: OpenTelemetry spans and metrics for every request (extra `otel`)

The OpenAI, Anthropic and Gemini adapters need no SDK; their tools go through the provider schema
compilers (`mcpstation.catalog.compile`). Every adapter calls through the station's pipeline with a `Caller`:
the one passed as `caller=`, else `llm_caller(<framework>)`, a model with the `user` role.
This package imports none of the frameworks.
"""

from mcpstation.integrations._calls import llm_caller

__all__ = ["llm_caller"]
