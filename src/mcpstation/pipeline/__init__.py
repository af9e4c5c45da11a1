"""The one request pipeline: resolution (with the LLM surface's meta-tools), then visibility, audit, caller
layers, URL guard, bounds, route."""

from mcpstation.pipeline.audit import AuditTrail
from mcpstation.pipeline.bounds import Bounds
from mcpstation.pipeline.caller import CALLER_SCOPE_KEY, STATION_ISSUER, Caller, Face, Principal
from mcpstation.pipeline.pipeline import Pipeline, assemble, compose
from mcpstation.pipeline.request import Handler, Layer, Request, RequestKind
from mcpstation.pipeline.route import CALLER_META_KEY, OUTCOME_META_KEY, Router
from mcpstation.pipeline.surface import META_TOOLS, Surface, SurfaceTotals, ToolSurface
from mcpstation.pipeline.url_guard import UrlGuardLayer
from mcpstation.pipeline.visibility import Visibility

__all__ = [
    "CALLER_META_KEY",
    "CALLER_SCOPE_KEY",
    "META_TOOLS",
    "OUTCOME_META_KEY",
    "STATION_ISSUER",
    "AuditTrail",
    "Bounds",
    "Caller",
    "Face",
    "Handler",
    "Layer",
    "Pipeline",
    "Principal",
    "Request",
    "RequestKind",
    "Router",
    "Surface",
    "SurfaceTotals",
    "ToolSurface",
    "UrlGuardLayer",
    "Visibility",
    "assemble",
    "compose",
]
