"""How the gateway asks its client to confirm a call of a confirm-tier tool: an elicitation.

The question goes on the downstream request's own stream as a form elicitation with no fields
(the person accepts or declines); only `accept` runs the call. A client that did not declare
elicitation, or a stream that cannot carry a request back, cannot be asked: the call is refused
as unaskable by the confirm tier (`pipeline/confirm.py`), never run unconfirmed.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import NoBackChannelError

from mcpstation.gateway._sessions import DownstreamSessions
from mcpstation.gateway.relay import DownstreamRequest
from mcpstation.pipeline import Ask, Question

NO_FIELDS: types.ElicitRequestedSchema = {"type": "object", "properties": {}}


def elicitation_ask(ctx: ServerRequestContext[Any, Any], sessions: DownstreamSessions) -> Ask | None:
    """Asks the client of the request `ctx` through elicitation, or None when it cannot be asked."""
    if ctx.request_id is None:
        return None
    downstream = DownstreamRequest.of(ctx, sessions)
    if not downstream.declared("elicitation"):
        return None

    async def ask(question: Question) -> bool:
        params = types.ElicitRequestFormParams(message=question.text(), requested_schema=NO_FIELDS)
        try:
            answer = await downstream.ask(types.ElicitRequest(params=params), types.ElicitResult)
        except NoBackChannelError:
            return False
        return isinstance(answer, types.ElicitResult) and answer.action == "accept"

    return ask
