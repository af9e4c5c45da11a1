"""The one request pipeline: resolution (with the LLM surface's meta-tools), then visibility, store gate, audit, caller
layers, argument check, URL guard, confirm tier, bounds, route."""

from mcpstation.pipeline.arguments import ArgumentCheck
from mcpstation.pipeline.audit import AuditTrail
from mcpstation.pipeline.bounds import Bounds
from mcpstation.pipeline.caller import CALLER_SCOPE_KEY, STATION_ISSUER, Caller, Face, Principal
from mcpstation.pipeline.confirm import Confirmation, ConfirmTier
from mcpstation.pipeline.kinds import KINDS, Kind, RequestKind, Upstream
from mcpstation.pipeline.pipeline import Pipeline, assemble, compose
from mcpstation.pipeline.prompt_owner import PromptOwner, PromptOwners
from mcpstation.pipeline.request import Ask, Handler, Layer, Question, Request, Via
from mcpstation.pipeline.route import AUTHORIZATION_URL, CALLER_META_KEY, OUTCOME_META_KEY, Router
from mcpstation.pipeline.store_gate import StoreGate
from mcpstation.pipeline.surface import HOST_TOOLS, META_TOOLS, RUN_CODE, CodeTool, Surface, SurfaceTotals, ToolSurface
from mcpstation.pipeline.uri_owner import Offer, UriOwner, UriOwners
from mcpstation.pipeline.url_guard import UrlGuardLayer, needs_url_guard
from mcpstation.pipeline.visibility import Visibility

__all__ = [
    "AUTHORIZATION_URL",
    "CALLER_META_KEY",
    "CALLER_SCOPE_KEY",
    "HOST_TOOLS",
    "KINDS",
    "META_TOOLS",
    "OUTCOME_META_KEY",
    "RUN_CODE",
    "STATION_ISSUER",
    "ArgumentCheck",
    "Ask",
    "AuditTrail",
    "Bounds",
    "Caller",
    "CodeTool",
    "ConfirmTier",
    "Confirmation",
    "Face",
    "Handler",
    "Kind",
    "Layer",
    "Offer",
    "Pipeline",
    "Principal",
    "PromptOwner",
    "PromptOwners",
    "Question",
    "Request",
    "RequestKind",
    "Router",
    "StoreGate",
    "Surface",
    "SurfaceTotals",
    "ToolSurface",
    "Upstream",
    "UriOwner",
    "UriOwners",
    "UrlGuardLayer",
    "Via",
    "Visibility",
    "assemble",
    "compose",
    "needs_url_guard",
]
