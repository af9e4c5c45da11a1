"""The catalog: what every server offers, merged under public names, conflicts made explicit.

A `Catalog` is immutable. The station builds a new one whenever a server's lists change and
swaps the reference, so a reader always sees one consistent snapshot and a call already in
flight keeps the entry it resolved.
"""

from __future__ import annotations

import difflib
import fnmatch
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcpstation.catalog.naming import public_name
from mcpstation.config.models import NamingMode
from mcpstation.connection.listing import ServerListing

logger = logging.getLogger(__name__)

EMPTY_INPUT_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}
EntryKind = Literal["tool", "prompt", "resource", "template"]


@dataclass(frozen=True, slots=True)
class CatalogTool:
    """A tool as the LLM sees it: public `name`, owner `(server, tool)`."""

    name: str
    server: str
    tool: str
    description: str
    input_schema: Mapping[str, Any]
    definition: types.Tool = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "server": self.server,
            "tool": self.tool,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }


@dataclass(frozen=True, slots=True)
class CatalogPrompt:
    name: str
    server: str
    prompt: str
    description: str
    arguments: tuple[types.PromptArgument, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "server": self.server,
            "prompt": self.prompt,
            "description": self.description,
            "arguments": [a.model_dump(mode="json", by_alias=True, exclude_none=True) for a in self.arguments],
        }


@dataclass(frozen=True, slots=True)
class CatalogResource:
    uri: str
    server: str
    name: str
    description: str
    mime_type: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "resource",
            "uri": self.uri,
            "server": self.server,
            "name": self.name,
            "description": self.description,
            "mime_type": self.mime_type,
        }


@dataclass(frozen=True, slots=True)
class CatalogTemplate:
    uri_template: str
    server: str
    name: str
    description: str
    mime_type: str | None
    matcher: UriTemplate | None = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "template",
            "uri_template": self.uri_template,
            "server": self.server,
            "name": self.name,
            "description": self.description,
            "mime_type": self.mime_type,
        }


@dataclass(frozen=True, slots=True)
class Conflict:
    """An entry that was not published, and why; the winner keeps the name."""

    kind: EntryKind
    name: str
    server: str
    original: str
    winner: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "server": self.server,
            "original": self.original,
            "winner": self.winner,
            "reason": self.reason,
        }

    def __str__(self) -> str:
        return f"{self.kind} {self.original!r} of server {self.server!r} skipped: {self.reason}"


def tool_selected(name: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Apply a server's include/exclude glob patterns to one of its tool names."""
    if include and not any(fnmatch.fnmatchcase(name, pattern) for pattern in include):
        return False
    return not any(fnmatch.fnmatchcase(name, pattern) for pattern in exclude)


@dataclass(frozen=True)
class Catalog:
    """One consistent snapshot of the merged tools, prompts, resources and templates."""

    tools: Mapping[str, CatalogTool] = field(default_factory=dict)
    prompts: Mapping[str, CatalogPrompt] = field(default_factory=dict)
    resources: Mapping[str, CatalogResource] = field(default_factory=dict)
    templates: Mapping[str, CatalogTemplate] = field(default_factory=dict)
    conflicts: tuple[Conflict, ...] = ()

    @classmethod
    def build(
        cls,
        listings: Iterable[ServerListing],
        *,
        naming: NamingMode,
        reserved: Iterable[str] = (),
        owned: Mapping[str, str] | None = None,
        clean: Callable[[str], str] = str,
        hidden: Callable[[str, types.Tool], str | None] | None = None,
    ) -> Catalog:
        """Merge listings in config order: the first registration of a name wins.

        `reserved` tool names no server may take; `owned` maps tool names to the one server that
        may (the station's own tools). `clean` is applied to every description before it can
        reach an LLM. `hidden` may keep a tool out, with its reason reported like a conflict
        (tool pinning).
        """
        owners = owned or {}
        tools: dict[str, CatalogTool] = {}
        reserved_names = frozenset(reserved)
        prompts: dict[str, CatalogPrompt] = {}
        resources: dict[str, CatalogResource] = {}
        templates: dict[str, CatalogTemplate] = {}
        conflicts: list[Conflict] = []

        def claim(table: dict[str, Any], kind: EntryKind, key: str, original: str, entry: Any) -> None:
            holder = table.get(key)
            if holder is None:
                table[key] = entry
            else:
                reason = f"{key!r} already taken by server {holder.server!r}"
                conflicts.append(Conflict(kind, key, entry.server, original, holder.server, reason))

        for listing in listings:
            server, mode, namespace = listing.server, listing.naming or naming, listing.namespace
            filtered = bool(listing.include_tools or listing.exclude_tools)
            for tool in listing.tools:  # the hot loop of a 10,000-tool listing: nothing per tool that need not be
                if filtered and not tool_selected(tool.name, listing.include_tools, listing.exclude_tools):
                    continue
                name = public_name(mode, server=server, namespace=namespace, name=tool.name)
                held = hidden(server, tool) if hidden is not None else None
                if held is None and (name in reserved_names or owners.get(name, server) != server):
                    held = "name is reserved for the host"
                if held is not None:
                    conflicts.append(Conflict("tool", name, server, tool.name, None, held))
                    continue
                schema = tool.input_schema or EMPTY_INPUT_SCHEMA
                entry = CatalogTool(name, server, tool.name, clean(tool.description or ""), schema, tool)
                if name in tools:
                    claim(tools, "tool", name, tool.name, entry)
                else:
                    tools[name] = entry
            for prompt in listing.prompts:
                name = public_name(mode, server=server, namespace=namespace, name=prompt.name)
                arguments = tuple(prompt.arguments or ())
                claim(prompts, "prompt", name, prompt.name, CatalogPrompt(
                    name, server, prompt.name, clean(prompt.description or ""), arguments
                ))  # fmt: skip
            for resource in listing.resources:
                uri = str(resource.uri)
                description = clean(resource.description or "")
                claim(resources, "resource", uri, uri, CatalogResource(
                    uri, server, resource.name, description, resource.mime_type
                ))  # fmt: skip
            for template in listing.templates:
                pattern = template.uri_template
                description = clean(template.description or "")
                matcher = _parse_template(pattern, server) if pattern not in templates else None
                claim(templates, "template", pattern, pattern, CatalogTemplate(
                    pattern, server, template.name, description, template.mime_type, matcher
                ))  # fmt: skip
        return cls(tools=tools, prompts=prompts, resources=resources, templates=templates, conflicts=tuple(conflicts))

    def suggest(self, name: str, kind: Literal["tool", "prompt"] = "tool") -> list[str]:
        """Close matches for a name that is not in the catalog."""
        names = self.tools if kind == "tool" else self.prompts
        return difflib.get_close_matches(name, list(names), n=3, cutoff=0.6)

    def resource_owner(self, uri: str) -> str | None:
        """The server that offers `uri`, directly or through one of its templates."""
        resource = self.resources.get(uri)
        if resource is not None:
            return resource.server
        for template in self.templates.values():
            if template.matcher is not None and template.matcher.match(uri) is not None:
                return template.server
        return None

    def conflicts_of(self, server: str) -> list[Conflict]:
        return [c for c in self.conflicts if c.server == server]


def _parse_template(pattern: str, server: str) -> UriTemplate | None:
    try:
        return UriTemplate.parse(pattern)
    except InvalidUriTemplate:
        logger.warning("server %r offers an invalid resource template %r; it cannot route reads", server, pattern)
        return None


def object_schema(tool: CatalogTool) -> dict[str, Any]:
    """The tool's input schema as the server wrote it, made an object (for frameworks that take JSON Schema)."""
    schema = dict(tool.input_schema)
    schema.setdefault("type", "object")
    if schema["type"] == "object":
        schema.setdefault("properties", {})
    return schema
