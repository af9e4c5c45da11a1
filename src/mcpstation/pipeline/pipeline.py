"""`Pipeline`: the one front door. Every face's every request is resolved here and sent through the
same composed layers, with the caller's identity:

    resolve ─> visibility ─> store gate ─> audit ─> caller layers (metrics, tracing) ─> argument check ─> URL guard
            ─> confirm tier ─> bounds ─> route

`assemble` is the one place the order is written. Visibility is outermost, so a hidden entry is
answered exactly like an absent one and never reaches audit or metrics. Audit (and the caller's
layers) come before the rules that refuse (argument check, guard) and the bounds, so a refused or
oversized answer is recorded with its outcome like any other. The argument check comes before the
URL guard: it is local and costs a microsecond, while the guard may resolve host names, which is
wasted on a call that is refused anyway (and whose refusal should name what to fix first). The
confirm tier comes after both, so nobody is asked about a call that is refused anyway, and before
the bounds, whose timeout is the tool's and not the person's. The store gate comes just before
audit: a request it refuses (the store is down) could not be recorded.
A layer
with nothing to do for this station is left out.

Resolution also answers the tool-search meta-tools (`surface.py`): `mcp_search_tools` from the
search index, `mcp_call_tool` by resolving its target and sending that down the same path, so the
inner call is the one that is checked for visibility, audited, guarded and bounded.
"""

from __future__ import annotations

import difflib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from mcpstation.catalog import (
    AnyResult,
    Catalog,
    CatalogPrompt,
    CatalogResource,
    CatalogTemplate,
    CatalogTool,
    CompletionResult,
    PromptResult,
    ResourceResult,
    SearchHit,
    SubscriptionResult,
    ToolResult,
)
from mcpstation.catalog.search import DEFAULT_LIMIT
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.arguments import ArgumentCheck
from mcpstation.pipeline.audit import AuditTrail
from mcpstation.pipeline.bounds import Bounds
from mcpstation.pipeline.caller import Caller
from mcpstation.pipeline.confirm import ConfirmTier
from mcpstation.pipeline.kinds import KINDS, CompletionRef, RequestKind
from mcpstation.pipeline.prompt_owner import PromptOwner, PromptOwners, PromptRule
from mcpstation.pipeline.request import Ask, Handler, Layer, Request, Via
from mcpstation.pipeline.store_gate import StoreGate
from mcpstation.pipeline.surface import CALL_TOOL, HOST_SERVER, RUN_CODE, Surface, SurfaceTotals, ToolSurface
from mcpstation.pipeline.uri_owner import Offer, UriOwner, UriOwners
from mcpstation.pipeline.url_guard import UrlGuardLayer
from mcpstation.pipeline.visibility import Visibility

SUGGESTIONS = 3  # did-you-mean names offered for an unknown name
RUN_ID_CHARS = 12  # hex digits of a code-mode run's id: unique enough to find its calls in the audit trail


def compose(innermost: Handler, layers: Sequence[Layer]) -> Handler:
    """Wrap `innermost` so that `layers[0]` runs first (outermost) and the last runs nearest."""
    handler = innermost
    for layer in reversed(layers):
        handler = layer(handler)
    return handler


def assemble(
    *,
    route: Handler,
    visibility: Visibility,
    bounds: Bounds,
    audit: AuditTrail | None = None,
    store_gate: StoreGate | None = None,
    caller_layers: Sequence[Layer] = (),
    arguments: ArgumentCheck | None = None,
    url_guard: UrlGuardLayer | None = None,
    confirm: ConfirmTier | None = None,
) -> Handler:
    """Every request's path, outermost first (see the module docstring for why in this order)."""
    layers: list[Layer] = [visibility.layer]
    if store_gate is not None:
        layers.append(store_gate.layer)
    if audit is not None:
        layers.append(audit.layer)
    layers.extend(caller_layers)
    if arguments is not None:
        layers.append(arguments)
    if url_guard is not None:
        layers.append(url_guard)
    if confirm is not None:
        layers.append(confirm)
    layers.append(bounds)
    return compose(route, layers)


OwnerHint = Callable[[str], str | None]
"""For a tool name the catalog lacks: the server it would belong to, if that can be known."""

OfflineReason = Callable[[str], str | None]
"""Why a server cannot answer now (not running, failed, pending, ...), or None when it can."""


class Pipeline:
    """Resolves what a caller asks for by public name or URI, then runs the composed handler.

    With a `surface`, the tool-search meta-tools are answered here too (`pipeline/surface.py`), and
    `tools_for` is the caller's LLM surface rather than every tool it may see.
    """

    def __init__(
        self,
        *,
        catalog: Callable[[], Catalog],
        visibility: Visibility,
        handler: Handler,
        owner_hint: OwnerHint,
        offline_reason: OfflineReason,
        surface: ToolSurface | None = None,
        uri_owners: UriOwners | None = None,
        prompt_owners: PromptOwners | None = None,
        confirm: ConfirmTier | None = None,
    ) -> None:
        """`uri_owners` and `prompt_owners` find the owner of a URI or prompt name no listing names
        (`uri_owner.py`, `prompt_owner.py`); by default only listings and templates, and what
        answered through this pipeline, decide."""
        self._catalog = catalog
        self.visibility = visibility
        self.handler = handler
        self._owner_hint = owner_hint
        self._offline_reason = offline_reason
        self.surface = surface
        self.uri_owners = uri_owners if uri_owners is not None else UriOwners(catalog, lambda offer: ())
        self.prompt_owners = (
            prompt_owners if prompt_owners is not None else PromptOwners(catalog, lambda offer: (), dict)
        )
        self.confirm = confirm

    # -- what a caller may see --------------------------------------------------------------------

    def visible_tools(self, caller: Caller) -> list[CatalogTool]:
        """Every tool `caller` may see and call."""
        return [t for t in self._catalog().tools.values() if self.visibility.can_see(caller, t.server, t.tool)]

    def surface_for(self, caller: Caller) -> Surface:
        """What `caller`'s model is handed: every visible tool, or the pinned ones and the meta-tools."""
        visible = self.visible_tools(caller)
        if self.surface is None:
            return Surface(tuple(visible), (), (), search=False)
        return self.surface.surface(visible)

    def tools_for(self, caller: Caller) -> list[CatalogTool]:
        """The tools `caller`'s model is handed (its LLM surface)."""
        return list(self.surface_for(caller).tools)

    def surface_totals(self, caller: Caller) -> SurfaceTotals | None:
        """Size and estimated schema tokens of `caller`'s surface, with and without tool search."""
        return self.surface.totals(self.visible_tools(caller)) if self.surface is not None else None

    async def search_tools(
        self, query: str, *, caller: Caller, limit: int = DEFAULT_LIMIT, server: str | None = None
    ) -> list[SearchHit]:
        """The best tools for `query` among what `caller` may see, best first (none without a surface).

        Raises:
            UsageError: `limit` is out of range.
        """
        if self.surface is None:
            return []
        return await self.surface.search(query, caller=caller, catalog=self._catalog(), limit=limit, server=server)

    def tool_owner(self, name: str, arguments: Mapping[str, Any] | None = None) -> str | None:
        """The server a call of `name` goes to (through `mcp_call_tool` to its target), if known."""
        if self.surface is not None and self.surface.answers(name):
            target = (arguments or {}).get("name") if name == CALL_TOOL else None
            name = target if isinstance(target, str) else ""
        entry = self._catalog().tools.get(name)
        return entry.server if entry is not None else None

    def needs_confirmation(self, name: str) -> bool:
        """Whether a call of the tool named `name` waits for a person's answer (the confirm tier)."""
        entry = self._catalog().tools.get(name)
        return entry is not None and self.confirm is not None and self.confirm.needs(entry.server, entry.tool)

    def prompts_for(self, caller: Caller) -> list[CatalogPrompt]:
        return [p for p in self._catalog().prompts.values() if self.visibility.can_see(caller, p.server)]

    def resources_for(self, caller: Caller) -> list[CatalogResource]:
        return [r for r in self._catalog().resources.values() if self.visibility.can_see(caller, r.server)]

    def templates_for(self, caller: Caller) -> list[CatalogTemplate]:
        return [t for t in self._catalog().templates.values() if self.visibility.can_see(caller, t.server)]

    def can_see_uri(self, uri: str, caller: Caller) -> bool:
        """Whether `caller` may read `uri` (its owner, by the rules of `uri_owner.py`, is visible to it)."""
        owner = self.uri_owners.owner(uri, offer=Offer.RESOURCES, visible=lambda server: True).server
        return owner is not None and self.visibility.can_see(caller, owner)

    # -- requests ---------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        caller: Caller,
        timeout_s: float | None = None,
        progress: ProgressFnT | None = None,
        meta: Mapping[str, Any] | None = None,
        via: Via | None = None,
        run_id: str | None = None,
        ask: Ask | None = None,
    ) -> ToolResult:
        """Call a tool (or a meta-tool) by public name; `via` and `run_id` say a code-mode run made the
        call; `ask` is how the caller confirms a call of a confirm-tier tool (`confirm.py`)."""
        if name == RUN_CODE and self.surface is not None and self.surface.answers(name):
            code = (arguments or {}).get("code")
            text = code if isinstance(code, str) else ""
            return await self.run_code(text, caller=caller, timeout_s=timeout_s, ask=ask)
        if self.surface is not None and self.surface.answers(name):

            async def call(inner: str, inner_arguments: Mapping[str, Any]) -> ToolResult:
                return await self._call_catalog_tool(inner, inner_arguments, caller, timeout_s, progress, meta, ask=ask)

            return await self.surface.answer(name, arguments or {}, caller=caller, catalog=self._catalog(), call=call)
        return await self._call_catalog_tool(name, arguments, caller, timeout_s, progress, meta, via, run_id, ask)

    async def run_code(
        self, code: str, *, caller: Caller, timeout_s: float | None = None, ask: Ask | None = None
    ) -> ToolResult:
        """Run a code-mode script for `caller` (`mcpstation.codemode`): each tool call it makes comes
        back through `call_tool` as this caller's own request, asked about through `ask` when it
        needs confirmation."""
        run_id = uuid.uuid4().hex[:RUN_ID_CHARS]
        request = Request(
            RequestKind.RUN_CODE, RUN_CODE, HOST_SERVER, RUN_CODE, caller, {"code": code}, timeout_s, run_id=run_id,
            ask=ask,
        )  # fmt: skip
        result = await self.handler(request)
        assert isinstance(result, ToolResult)
        return result

    async def _call_catalog_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        caller: Caller,
        timeout_s: float | None,
        progress: ProgressFnT | None,
        meta: Mapping[str, Any] | None,
        via: Via | None = None,
        run_id: str | None = None,
        ask: Ask | None = None,
    ) -> ToolResult:
        entry = self._catalog().tools.get(name)
        if entry is None:
            result = self._unknown_tool(name, caller)
        else:
            result = await self.handler(
                Request(
                    RequestKind.CALL_TOOL, name, entry.server, entry.tool, caller, arguments or {}, timeout_s,
                    progress, meta=meta, via=via, run_id=run_id, ask=ask,
                )
            )  # fmt: skip
        assert isinstance(result, ToolResult)
        return result

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None,
        *,
        caller: Caller,
        timeout_s: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> PromptResult:
        kind = RequestKind.GET_PROMPT
        owner = self._prompt_owner(name, caller)
        if owner.server is None:
            result = self._unclear_prompt(kind, name, caller, owner)
        else:
            request = Request(kind, name, owner.server, owner.target, caller, arguments or {}, timeout_s, meta=meta)
            result = self._hint_unlisted(await self.handler(request), owner, caller)
        assert isinstance(result, PromptResult)
        return result

    async def read_resource(
        self, uri: str, *, caller: Caller, timeout_s: float | None = None, meta: Mapping[str, Any] | None = None
    ) -> ResourceResult:
        result = await self._resource_request(RequestKind.READ_RESOURCE, uri, caller, timeout_s, meta)
        assert isinstance(result, ResourceResult)
        return result

    async def subscribe(self, uri: str, *, caller: Caller) -> SubscriptionResult:
        result = await self._resource_request(RequestKind.SUBSCRIBE, uri, caller, None, None)
        assert isinstance(result, SubscriptionResult)
        return result

    async def unsubscribe(self, uri: str, *, caller: Caller) -> SubscriptionResult:
        result = await self._resource_request(RequestKind.UNSUBSCRIBE, uri, caller, None, None)
        assert isinstance(result, SubscriptionResult)
        return result

    async def complete(
        self,
        ref: CompletionRef,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        *,
        caller: Caller,
        timeout_s: float | None = None,
    ) -> CompletionResult:
        """Complete a prompt's (by public name) or a resource template's (by URI template, or URI)
        argument; a name or URI no listing holds goes to its owner by the same rules as a
        `prompts/get` or a `resources/read` (`prompt_owner.py`, `uri_owner.py`)."""
        kind = RequestKind.COMPLETE
        result: AnyResult
        if isinstance(ref, types.PromptReference):
            owner = self._prompt_owner(ref.name, caller)
            if owner.server is None:
                result = self._unclear_prompt(kind, ref.name, caller, owner)
            else:
                upstream = ref.model_copy(update={"name": owner.target})
                result = await self.handler(
                    Request(kind, ref.name, owner.server, owner.target, caller, argument, timeout_s, ref=upstream,
                            context_arguments=context_arguments)
                )  # fmt: skip
                result = self._hint_unlisted(result, owner, caller)
        else:
            uri = ref.uri
            found = self._uri_owner(uri, Offer.COMPLETIONS, caller)
            if found.server is None:
                result = self._unclear_uri(kind, uri, found, Offer.COMPLETIONS)
            else:
                result = await self.handler(
                    Request(kind, uri, found.server, uri, caller, argument, timeout_s, ref=ref,
                            context_arguments=context_arguments, uri_variables=found.variables)
                )  # fmt: skip
                if result.ok:
                    self.uri_owners.remember(uri, found.server)
        assert isinstance(result, CompletionResult)
        return result

    async def _resource_request(
        self,
        kind: RequestKind,
        uri: str,
        caller: Caller,
        timeout_s: float | None,
        meta: Mapping[str, Any] | None,
    ) -> AnyResult:
        offer = Offer.RESOURCES if kind is RequestKind.READ_RESOURCE else Offer.SUBSCRIBE
        owner = self._uri_owner(uri, offer, caller)
        if owner.server is None:
            return self._unclear_uri(kind, uri, owner, offer)
        request = Request(kind, uri, owner.server, uri, caller, {}, timeout_s, uri_variables=owner.variables, meta=meta)
        result = await self.handler(request)
        if result.ok and kind is not RequestKind.UNSUBSCRIBE:
            self.uri_owners.remember(uri, owner.server)
        return result

    # -- names nobody has -----------------------------------------------------------------------------

    def _uri_owner(self, uri: str, offer: Offer, caller: Caller) -> UriOwner:
        return self.uri_owners.owner(uri, offer=offer, visible=lambda server: self.visibility.can_see(caller, server))

    def _prompt_owner(self, name: str, caller: Caller) -> PromptOwner:
        return self.prompt_owners.owner(name, visible=lambda server: self.visibility.can_see(caller, server))

    def _unclear_uri(self, kind: RequestKind, uri: str, owner: UriOwner, offer: Offer) -> AnyResult:
        """A URI no rule gives an owner: not found, naming the servers it could belong to."""
        if not owner.candidates:
            return self._not_found(kind, uri, [])
        names = ", ".join(repr(server) for server in owner.candidates)
        message = (
            f"no listing holds resource {uri!r} and its owner is not clear: it could be any of {names} "
            f"(they {offer}). Use a URI that one of their listings or templates names."
        )
        return KINDS[kind].failure(uri, Outcome.NOT_FOUND, message, server=None, target=None)

    def _hint_unlisted(self, result: AnyResult, owner: PromptOwner, caller: Caller) -> AnyResult:
        """A prompt no listing holds that its owner refused: did-you-mean among the owner's listed
        prompts that the caller may see (the owner's answer stays the outcome: it may be a typo,
        or the server's own refusal of a prompt it does hold)."""
        if result.ok or owner.rule is PromptRule.LISTING:
            return result
        public = {p.prompt: p.name for p in self.prompts_for(caller) if p.server == owner.server}
        close = difflib.get_close_matches(owner.target, list(public), n=SUGGESTIONS, cutoff=0.6)  # its own names
        if not close:
            return result
        suggestions = [public[own] for own in close]
        hint = f"No listing holds prompt {result.name!r}; did you mean {', '.join(map(repr, suggestions))}?"
        return replace(result, error=f"{result.error}. {hint}")

    def _unclear_prompt(self, kind: RequestKind, name: str, caller: Caller, owner: PromptOwner) -> AnyResult:
        """A prompt name no rule gives an owner: not found, naming the servers it could belong to."""
        if not owner.candidates:
            return self._not_found(kind, name, [p.name for p in self.prompts_for(caller)])
        names = ", ".join(repr(server) for server in owner.candidates)
        they = "share its name prefix" if owner.rule is PromptRule.NAMING else Offer.PROMPTS
        message = (
            f"no listing holds prompt {name!r} and its owner is not clear: it could be any of {names} "
            f"(they {they}). Use a name that one of their listings holds."
        )
        return KINDS[kind].failure(name, Outcome.NOT_FOUND, message, server=None, target=None)

    def _unknown_tool(self, name: str, caller: Caller) -> AnyResult:
        """An unknown tool: its own server named when that can be known, never a neighbour's tool."""
        owner = self._owner_hint(name)
        if owner is not None and not self.visibility.can_see(caller, owner):
            owner = None
        if owner is not None and (reason := self._offline_reason(owner)) is not None:
            return KINDS[RequestKind.CALL_TOOL].failure(name, Outcome.UNAVAILABLE, reason, server=owner, target=None)
        visible = [t.name for t in self.visible_tools(caller) if owner is None or t.server == owner]
        return self._not_found(RequestKind.CALL_TOOL, name, visible)

    def _not_found(self, kind: RequestKind, name: str, names: list[str]) -> AnyResult:
        """Not found, with did-you-mean suggestions among `names` (only names the caller may see)."""
        suggestions = difflib.get_close_matches(name, names, n=SUGGESTIONS, cutoff=0.6) if names else []
        row = KINDS[kind]
        return row.failure(name, Outcome.NOT_FOUND, row.not_found(name, suggestions), server=None, target=None)
