"""Where each client keeps its MCP config, on this machine and in the current project.

User files are looked for under `HOME`, `XDG_CONFIG_HOME` (default `~/.config`), macOS's
`~/Library/Application Support` and, when set, `APPDATA` (the Windows layout some Linux setups
share), plus each client's own override (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, ...). Project files
are looked for in the project directory. Project files come first: a client's project config
wins over its user config, and so does the first file here in an import.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Scope = Literal["project", "user"]

# Editors whose extension storage (globalStorage) may hold Cline's and Roo Code's settings.
_EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
_CLINE_STORAGE = ("saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")
_ROO_STORAGE = ("rooveterinaryinc.roo-cline", "settings", "mcp_settings.json")


@dataclass(frozen=True)
class Candidate:
    """A place a client's file may be."""

    client: str  # a client id
    path: Path
    scope: Scope


def candidates(environ: Mapping[str, str], project: Path) -> list[Candidate]:
    """Every place, project files first; duplicates (the same path twice) removed."""
    seen: set[Path] = set()
    out: list[Candidate] = []
    for candidate in (*_project(project), *_user(environ)):
        if candidate.path not in seen:
            seen.add(candidate.path)
            out.append(candidate)
    return out


def _project(project: Path) -> Iterator[Candidate]:
    yield Candidate("claude-code", project / ".mcp.json", "project")
    yield Candidate("cursor", project / ".cursor" / "mcp.json", "project")
    yield Candidate("vscode", project / ".vscode" / "mcp.json", "project")
    yield Candidate("vscode", project / ".vscode" / "settings.json", "project")
    yield Candidate("windsurf", project / ".windsurf" / "mcp_config.json", "project")
    yield Candidate("roo-code", project / ".roo" / "mcp.json", "project")
    yield Candidate("zed", project / ".zed" / "settings.json", "project")
    yield Candidate("codex", project / ".codex" / "config.toml", "project")
    yield Candidate("gemini-cli", project / ".gemini" / "settings.json", "project")
    blocks = project / ".continue" / "mcpServers"
    if blocks.is_dir():
        for block in sorted(blocks.iterdir()):
            if block.suffix in (".yaml", ".yml", ".json"):
                yield Candidate("continue", block, "project")
    yield Candidate("librechat", project / "librechat.yaml", "project")
    yield Candidate("librechat", project / "librechat.yml", "project")


def _user(environ: Mapping[str, str]) -> Iterator[Candidate]:
    home = Path(environ.get("HOME") or Path.home())
    configs = _config_dirs(environ, home)
    for base in configs:
        yield Candidate("claude-desktop", base / "Claude" / "claude_desktop_config.json", "user")
    claude_dir = environ.get("CLAUDE_CONFIG_DIR")
    yield Candidate("claude-code", (Path(claude_dir) if claude_dir else home) / ".claude.json", "user")
    yield Candidate("cursor", home / ".cursor" / "mcp.json", "user")
    for base in configs:
        for editor in ("Code", "Code - Insiders", "VSCodium"):
            yield Candidate("vscode", base / editor / "User" / "mcp.json", "user")
            yield Candidate("vscode", base / editor / "User" / "settings.json", "user")
    yield Candidate("windsurf", home / ".codeium" / "windsurf" / "mcp_config.json", "user")
    yield Candidate("windsurf", home / ".codeium" / "windsurf-next" / "mcp_config.json", "user")
    cline_override = environ.get("CLINE_MCP_SETTINGS_PATH")
    if cline_override:
        yield Candidate("cline", Path(cline_override), "user")
    yield Candidate("cline", home / ".cline" / "data" / "settings" / "cline_mcp_settings.json", "user")
    for base in configs:
        for editor in _EDITORS:
            storage = base / editor / "User" / "globalStorage"
            yield Candidate("cline", storage.joinpath(*_CLINE_STORAGE), "user")
            yield Candidate("roo-code", storage.joinpath(*_ROO_STORAGE), "user")
    for base in configs:
        yield Candidate("zed", base / "zed" / "settings.json", "user")
        yield Candidate("zed", base / "Zed" / "settings.json", "user")
    codex_home = environ.get("CODEX_HOME")
    yield Candidate("codex", (Path(codex_home) if codex_home else home / ".codex") / "config.toml", "user")
    yield Candidate("gemini-cli", home / ".gemini" / "settings.json", "user")
    yield Candidate("continue", home / ".continue" / "config.yaml", "user")
    yield Candidate("continue", home / ".continue" / "config.json", "user")
    for base in configs:
        yield Candidate("goose", base / "goose" / "config.yaml", "user")
        yield Candidate("goose", base / "Block" / "goose" / "config" / "config.yaml", "user")
    librechat = environ.get("CONFIG_PATH")
    if librechat and Path(librechat).suffix in (".yaml", ".yml"):
        yield Candidate("librechat", Path(librechat), "user")


def _config_dirs(environ: Mapping[str, str], home: Path) -> list[Path]:
    """`XDG_CONFIG_HOME` (or `~/.config`), `~/Library/Application Support`, then `APPDATA` if set."""
    dirs = [Path(environ.get("XDG_CONFIG_HOME") or home / ".config"), home / "Library" / "Application Support"]
    appdata = environ.get("APPDATA")
    if appdata:
        dirs.append(Path(appdata))
    return list(dict.fromkeys(dirs))
