"""The schemas the compilers are shown on: every tool of 19 public MCP servers, and adversarial ones.

`corpus/real/<server>.json` holds the tool lists `bench/search/collect.py` recorded from the
servers themselves (name, annotations, input schema). `ADVERSARIAL` covers what real servers
rarely send but a compiler must survive: root unions, `$ref` with siblings, recursion, circular
references, `{}`, `allOf`, `not`, huge enums, 12-level nesting, maps, `const`, tuples and more.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class Case:
    name: str  # "<server>/<tool>" for real tools, "adversarial/<case>" otherwise
    schema: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)


def real() -> list[Case]:
    cases: list[Case] = []
    for path in sorted((CORPUS / "real").glob("*.json")):
        listing = json.loads(path.read_text())
        for tool in listing["tools"]:
            cases.append(
                Case(f"{listing['server']}/{tool['name']}", tool["inputSchema"], tool.get("annotations") or {})
            )
    return cases


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for level in range(levels, 0, -1):
        schema = {"type": "object", "properties": {f"level{level}": schema}, "required": [f"level{level}"]}
    return schema


def _reference_bomb(levels: int) -> dict[str, Any]:
    """Each definition refers to the next twice: 2**levels nodes once inlined."""
    defs = {
        f"d{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/d{i + 1}"}, "b": {"$ref": f"#/$defs/d{i + 1}"}},
        }
        for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}


_OBJ_A = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}
_OBJ_B = {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"], "additionalProperties": False}

_ADVERSARIAL: dict[str, dict[str, Any]] = {
    "root-any-of": {"anyOf": [_OBJ_A, _OBJ_B]},
    "root-one-of-discriminated": {
        "oneOf": [
            {
                "type": "object",
                "properties": {"kind": {"const": "file"}, "path": {"type": "string"}},
                "required": ["kind", "path"],
            },
            {
                "type": "object",
                "properties": {"kind": {"const": "url"}, "url": {"type": "string", "format": "uri"}},
                "required": ["kind", "url"],
            },
        ]
    },
    "root-properties-with-any-of-required": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
        "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
    },
    "ref-siblings-intersect": {
        "type": "object",
        "properties": {"count": {"$ref": "#/$defs/Count", "maximum": 1000, "description": "How many."}},
        "required": ["count"],
        "$defs": {"Count": {"type": "integer", "minimum": 0, "maximum": 100}},
    },
    "ref-siblings-add-property": {
        "type": "object",
        "properties": {
            "item": {"$ref": "#/definitions/Base", "required": ["extra"], "properties": {"extra": {"type": "boolean"}}}
        },
        "definitions": {"Base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
    },
    "recursion-tree": {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "label": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["label"],
            }
        },
    },
    "recursion-optional-link": {
        "$ref": "#/$defs/Link",
        "$defs": {
            "Link": {
                "type": "object",
                "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/Link"}},
                "required": ["value"],
            }
        },
    },
    "recursion-to-root": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "parent": {"$ref": "#"}},
        "required": ["name"],
    },
    "circular-ref": {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "string"}]}},
    },
    "empty-root": {},
    "any-value-property": {
        "type": "object",
        "properties": {"value": {}, "note": {"type": "string"}},
        "required": ["value"],
    },
    "all-of-objects": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer", "minimum": 1}}},
        ]
    },
    "all-of-closed-conflict": {
        "type": "object",
        "properties": {
            "v": {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
                    {"type": "object", "properties": {"b": {"type": "string"}}},
                ]
            }
        },
    },
    "all-of-two-patterns": {
        "type": "object",
        "properties": {"code": {"allOf": [{"type": "string", "pattern": "^[A-Z]"}, {"pattern": "[0-9]$"}]}},
        "required": ["code"],
    },
    "not-keyword": {
        "type": "object",
        "properties": {"user": {"type": "string", "not": {"enum": ["root", "admin"]}}},
        "required": ["user"],
    },
    "huge-enum": {
        "type": "object",
        "properties": {"city": {"type": "string", "enum": [f"city-{i:04d}-{'x' * 12}" for i in range(1200)]}},
        "required": ["city"],
    },
    "nesting-12-levels": _nested(12),
    "map-of-strings": {
        "type": "object",
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 63}}},
        "required": ["labels"],
    },
    "pattern-properties": {
        "type": "object",
        "properties": {
            "env": {
                "type": "object",
                "patternProperties": {"^[A-Z_]+$": {"type": "string"}},
                "additionalProperties": False,
            }
        },
    },
    "const-values": {
        "type": "object",
        "properties": {"version": {"const": 2}, "mode": {"const": "fast"}},
        "required": ["version", "mode"],
    },
    "tuple-2020": {
        "type": "object",
        "properties": {
            "point": {
                "type": "array",
                "prefixItems": [{"type": "number"}, {"type": "number"}],
                "items": False,
                "minItems": 2,
            }
        },
        "required": ["point"],
    },
    "tuple-draft-07": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False}
        },
    },
    "type-list": {
        "type": "object",
        "properties": {"id": {"type": ["string", "integer", "null"], "minLength": 1, "minimum": 0}},
    },
    "nullable-optional": {
        "type": "object",
        "properties": {"cursor": {"type": ["string", "null"]}, "limit": {"type": "integer", "enum": [10, 50, 100]}},
    },
    "one-of-overlapping": {
        "type": "object",
        "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]}},
        "required": ["v"],
    },
    "one-of-disjoint-types": {
        "type": "object",
        "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        "required": ["v"],
    },
    "if-then-else": {
        "type": "object",
        "properties": {"unit": {"enum": ["c", "f"]}, "value": {"type": "number"}},
        "if": {"properties": {"unit": {"const": "c"}}},
        "then": {"properties": {"value": {"minimum": -273.15}}},
        "else": {"properties": {"value": {"minimum": -459.67}}},
    },
    "dependent-required": {
        "type": "object",
        "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
        "dependentRequired": {"card": ["billing"]},
    },
    "remote-ref": {"type": "object", "properties": {"geo": {"$ref": "https://example.com/geo.json"}}},
    "root-not-object": {"type": "string"},
    "boolean-subschemas": {
        "type": "object",
        "properties": {"anything": True, "never": False, "ok": {"type": "boolean"}},
    },
    "draft-04-exclusive": {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1}},
    },
    "lookahead-pattern": {
        "type": "object",
        "properties": {"password": {"type": "string", "pattern": "^(?=.*[0-9]).{8,}$"}},
        "required": ["password"],
    },
    "reference-bomb": _reference_bomb(24),
    "array-without-items": {
        "type": "object",
        "properties": {"values": {"type": "array", "minItems": 2, "uniqueItems": True}},
    },
    "integer-enum-nullable": {"type": "object", "properties": {"level": {"enum": [1, 2, 3, None]}}},
    "free-form-object": {"type": "object", "properties": {"metadata": {"type": "object", "description": "Anything."}}},
    "strings-with-bounds": {
        "type": "object",
        "properties": {
            "q": {"type": "string", "minLength": 1, "maxLength": 100, "format": "uri"},
            "when": {"type": "string", "format": "date-time"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
            "score": {"type": "number", "exclusiveMaximum": 1, "multipleOf": 0.5},
        },
        "required": ["q"],
        "additionalProperties": False,
    },
}


def adversarial() -> list[Case]:
    return [Case(f"adversarial/{name}", schema) for name, schema in _ADVERSARIAL.items()]


def every() -> list[Case]:
    return [*real(), *adversarial()]
