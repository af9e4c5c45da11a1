"""A model's calls on their way in: provider names mapped back, strict mode's added nulls removed.

The export compiled each tool for its provider (`catalog.compile`); this undoes what it changed
in a call, so the station sees the catalog's name and arguments as the original schema expects
them. The arguments are then validated against the original schema by the station's pipeline,
like every call from every face.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpstation.catalog.compile import Target, compile_schema, provider_names
from mcpstation.integrations._calls import ArgumentsError, PendingCall
from mcpstation.pipeline import Caller
from mcpstation.station import Station


def incoming(station: Station, caller: Caller, target: Target, calls: Sequence[PendingCall]) -> list[PendingCall]:
    """`calls` as the model made them for `target`, with catalog names and restored arguments.

    Any tool `caller` may see can be called, so names are mapped over its whole surface. For OpenAI
    pass `Target.OPENAI_STRICT`: only nulls the original schema rejects are removed, so this is
    right for tools exported plain too.
    """
    surface = station.requests.surface_for(caller)
    tools = {tool.name: tool for tool in (*surface.visible, *surface.meta)}
    names = provider_names(list(tools), target.provider)
    out: list[PendingCall] = []
    for name, arguments in calls:
        catalog_name = names.incoming(name)
        tool = tools.get(catalog_name)
        if tool is None or isinstance(arguments, ArgumentsError) or target is not Target.OPENAI_STRICT:
            out.append((catalog_name, arguments))
            continue
        out.append((catalog_name, compile_schema(tool.input_schema, target).restore(arguments)))
    return out
