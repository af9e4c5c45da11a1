"""Text to data: one parser per format, syntax errors reported with the parser's line."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from typing import Any, Literal

from mcpstation.config._jsonc import blank_jsonc
from mcpstation.config._lines import LineMap, json_lines, toml_lines, yaml_lines
from mcpstation.config._problem import Problem

Format = Literal["toml", "json", "yaml"]

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column \d+\)")


@dataclass(frozen=True)
class Document:
    """A parsed file: its data and where each key sits."""

    data: Any
    lines: LineMap


def parse_document(text: str, fmt: Format, *, comments: bool = False) -> Document:
    """Parse `text` as `fmt`; with `comments`, JSON may hold comments and trailing commas (JSONC).

    Raises:
        Problem: a syntax error (at the top level, with the parser's line) or a duplicate key.
    """
    if fmt == "toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            message = str(exc)
            position = _TOML_POSITION.search(message)
            line = int(position.group(1)) if position else None
            raise Problem((), f"invalid TOML: {_TOML_POSITION.sub('', message)}.", line=line) from None
        return Document(data, toml_lines(text))
    if fmt == "json":
        if comments:
            text = blank_jsonc(text)  # same length and lines: positions stay the user's
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise Problem((), f"invalid JSON: {exc.msg}.", line=exc.lineno) from None
        return Document(data, json_lines(text))
    import yaml  # loaded only when a YAML file is read

    try:
        data = yaml.safe_load(text)
        lines = yaml_lines(text)
    except yaml.MarkedYAMLError as exc:
        # Only the problem text: str(exc) quotes the offending source line, which may hold a secret.
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise Problem((), f"invalid YAML: {exc.problem or exc.context}.", line=line) from None
    except yaml.YAMLError:
        raise Problem((), "invalid YAML.") from None
    return Document(data, lines)
