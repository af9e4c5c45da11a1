"""`/openapi.json`: built from the route table and the pydantic models the handlers use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from mcpstation.api.models import MODELS, ErrorBody

OPENAPI_VERSION = "3.1.0"
REF = "#/components/schemas/{model}"

_ERRORS: dict[int, str] = {
    400: "Bad request (invalid query or arguments).",
    401: "No token, or an unknown one.",
    403: "The token's role is too low, or the request came from another origin.",
    404: "No such server, tool, prompt or resource.",
    422: "The body does not match its schema.",
    502: "The server answered with an error.",
    503: "The server is not connected, or the station's store cannot be reached; retry after `Retry-After` seconds.",
    504: "The server did not answer in time.",
}


@dataclass(frozen=True, slots=True)
class Param:
    """A query or path parameter."""

    name: str
    where: Literal["query", "path"]
    description: str
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "string"})
    required: bool = False


@dataclass(frozen=True, slots=True)
class Operation:
    """What the document says about one route (the route table in `app.py` builds these)."""

    method: str
    path: str
    summary: str
    role: str | None
    body: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    media_type: str = "application/json"
    params: tuple[Param, ...] = ()
    extra_responses: Mapping[int, tuple[str, type[BaseModel]]] = field(default_factory=dict)
    tag: str = "mcp"


def openapi_document(operations: Sequence[Operation], *, version: str, public_health: bool) -> dict[str, Any]:
    """The OpenAPI 3.1 document for `operations`, with every model under `components.schemas`."""
    _, defs = models_json_schema([(model, "validation") for model in MODELS], ref_template=REF)
    schemas = defs.get("$defs", {})
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, public_health=public_health)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "mcpstation",
            "version": version,
            "description": (
                "Manage the station's MCP servers and use their tools, prompts and resources. Every route needs "
                "`Authorization: Bearer <token>` (`mcpstation token create --role admin|user --name NAME`); `admin` "
                "manages servers, `user` calls the tools its role may see. Errors are `ErrorBody`."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


def _operation(op: Operation, *, public_health: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "summary": op.summary,
        "operationId": f"{op.method.lower()}_{op.path.strip('/').replace('/', '_').replace('{', '').replace('}', '')}",
        "tags": [op.tag],
    }
    if op.role is not None:
        doc["description"] = f"Needs the `{op.role}` role."
    elif op.path == "/api/health" and public_health:
        doc["security"] = []
    if op.params:
        doc["parameters"] = [
            {
                "name": p.name,
                "in": p.where,
                "required": p.required or p.where == "path",
                "description": p.description,
                "schema": p.schema,
            }
            for p in op.params
        ]
    if op.body is not None:
        doc["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(op.body)}}}
    ok: dict[str, Any] = {"description": "OK"}
    if op.response is not None:
        ok["content"] = {op.media_type: {"schema": _ref(op.response)}}
    elif op.media_type != "application/json":
        ok["content"] = {op.media_type: {"schema": {"type": "string"}}}
    responses: dict[str, Any] = {"200": ok}
    for status, (description, model) in op.extra_responses.items():
        responses[str(status)] = {"description": description, "content": {"application/json": {"schema": _ref(model)}}}
    codes = [401, 403] + ([422] if op.body is not None else []) + ([404] if "{" in op.path else [])
    for status in codes:
        responses.setdefault(str(status), _error(status))
    responses.setdefault("default", {"description": "An error.", "content": _error_content()})
    doc["responses"] = responses
    return doc


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _error(status: int) -> dict[str, Any]:
    return {"description": _ERRORS.get(status, "An error."), "content": _error_content()}


def _error_content() -> dict[str, Any]:
    return {"application/json": {"schema": _ref(ErrorBody)}}
