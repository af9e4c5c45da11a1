"""Load a configuration file of any supported shape into one validated `StationConfig`.

Steps: parse the text (by extension) → expand `${VAR}` → convert the shape to native → validate.
Every failure is a `ConfigError` naming the file, the line, the field path and what was expected.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from mcpstation.config._expand import expand
from mcpstation.config._formats import to_native
from mcpstation.config._lines import line_of
from mcpstation.config._parse import Format, parse_document
from mcpstation.config._problem import Problem, render_path
from mcpstation.config._validate import validate
from mcpstation.config.models import StationConfig, StdioServerSpec
from mcpstation.errors import ConfigError

logger = logging.getLogger(__name__)

CONFIG_ENV_VAR = "MCPSTATION_CONFIG"
DEFAULT_CONFIG_NAME = "mcpstation.toml"
_FORMATS: dict[str, Format] = {".toml": "toml", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}


def load_config(path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> StationConfig:
    """Read, expand and validate the file at `path`; the result's `source` is that path.

    Raises:
        ConfigError: the file is missing, unreadable, of an unknown extension, or invalid.
        MissingVariablesError: `${VAR}` references without a value (all of them listed).
    """
    file = Path(path).expanduser()
    fmt = _FORMATS.get(file.suffix.lower())
    if fmt is None:
        raise ConfigError(
            f"unknown config format {file.suffix!r}; expected .toml, .json, .yaml or .yml.", path=str(file)
        )
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no such file.", path=str(file)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc.__class__.__name__}.", path=str(file)) from None
    return parse_config(text, fmt=fmt, source=str(file), environ=environ)


def parse_config(
    text: str, *, fmt: Format, source: str | None = None, environ: Mapping[str, str] | None = None
) -> StationConfig:
    """Parse `text` as `fmt` (any supported shape) into a `StationConfig`.

    Raises:
        ConfigError: a syntax error, an unknown key, a wrong type or value, a duplicate server.
        MissingVariablesError: `${VAR}` references without a value (all of them listed).
    """
    label = source or f"<{fmt}>"
    lines = None
    try:
        document = parse_document(text, fmt)
        lines = document.lines
        data = expand(document.data, os.environ if environ is None else environ, source=label)
        converted = to_native(data)
    except Problem as problem:
        line = problem.line if problem.line is not None or lines is None else line_of(lines, problem.where)
        raise ConfigError(problem.message, path=label, line=line, key=render_path(problem.where) or None) from None
    config = validate(converted, document.lines, source=source, label=label)
    _log_presets(config)
    return config


def default_config() -> StationConfig:
    """The configuration used when there is no file: one stdio demo server."""
    demo = StdioServerSpec(name="demo", command=sys.executable, args=("-m", "mcpstation.testing.demo_server"))
    return StationConfig(servers=(demo,))


def resolve_config_path(
    explicit: str | None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Path | None:
    """Pick the config file: `explicit` (`--config`) > `$MCPSTATION_CONFIG` > `./mcpstation.toml`.

    Returns None when none applies, meaning `default_config()`. Relative paths are taken from `cwd`.
    """
    base = Path.cwd() if cwd is None else Path(cwd)
    environ = os.environ if environ is None else environ
    if explicit:
        return base / Path(explicit).expanduser()
    from_env = environ.get(CONFIG_ENV_VAR)
    if from_env:
        return base / Path(from_env).expanduser()
    candidate = base / DEFAULT_CONFIG_NAME
    return candidate if candidate.is_file() else None


def _log_presets(config: StationConfig) -> None:
    presets = config.presets
    on = [name for name, enabled in (("fetch", presets.fetch_enabled), ("exa", presets.exa_enabled)) if enabled]
    if on:
        logger.info("presets enabled: %s", ", ".join(on))
