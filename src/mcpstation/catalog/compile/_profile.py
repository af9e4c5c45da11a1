"""What a target accepts, as data: each target module fills in one `Profile` (two for strict targets)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from mcpstation.catalog.compile.diagnostics import Diagnostic


class Handling(Enum):
    KEEP = "keep"  # written as it is
    BLOCK = "block"  # strict mode cannot express it: the tool falls back to plain
    REWRITE = (
        "rewrite"  # written another way, with a lossy diagnostic (maps described, tuples flattened, recursion cut)
    )


class Nulls(Enum):
    TYPE_LIST = "type-list"  # {"type": ["string", "null"]}
    OPENAPI = "openapi"  # {"type": "string", "nullable": true}


@dataclass(frozen=True, slots=True)
class Profile:
    """One target's subset of JSON Schema. Defaults describe a target that takes everything."""

    name: str
    strict: bool = False
    constraints: frozenset[str] | None = None  # constraint keywords kept; None: every one
    formats: frozenset[str] | None = None  # `format` values kept; None: every one
    annotations: frozenset[str] | None = None  # annotations kept besides `description`; None: every one
    moved: frozenset[str] = frozenset({"default", "examples", "title"})  # the others, moved into the description
    one_of: bool = True  # oneOf kept (else written as anyOf)
    all_of: Handling = Handling.KEEP  # allOf whose branches conflict
    type_lists: bool = True  # ["string", "integer"] kept (else split into anyOf); a null pair is always kept
    const: bool = True  # const kept (else enum of one)
    any_value: bool = True  # {} and other typeless schemas kept
    infer_types: bool = False  # a typeless schema with object or array keywords gets that type
    primitive_enums: bool = False  # enum and const values must be strings, numbers, booleans or null
    string_enums: bool = False  # enum values must be strings (Gemini's OpenAPI subset)
    maps: Handling = Handling.KEEP  # additionalProperties/patternProperties with a schema
    pattern_properties: bool = True  # patternProperties can be written (with maps KEEP)
    closed_false: bool = True  # additionalProperties: false can be written
    tuples: Handling = Handling.KEEP  # prefixItems
    recursion: Handling = Handling.KEEP  # recursive $ref (KEEP: in $defs; REWRITE: unrolled a few levels)
    nulls: Nulls = Nulls.TYPE_LIST
    close_objects: bool = False  # every object gets additionalProperties: false
    require_all: bool = False  # every property required; optional ones made nullable (removed on the way back)
    any_of_alone: bool = False  # anyOf may have no sibling keywords
    array_items: bool = False  # an array must say `items`
    ref_siblings: bool = True  # description and title may sit beside $ref
    keep_unknown: bool = True  # keywords JSON Schema does not know are kept
    min_items_at_most: int | None = None  # minItems above this is dropped (Anthropic strict: 1)
    pattern_ok: Callable[[str], bool] | None = None  # patterns this returns False for are dropped
    limits: Callable[[dict[str, Any]], list[Diagnostic]] | None = None  # size limits of the compiled schema
    fallback: Profile | None = None  # a strict profile's plain twin
