"""The house rules that code review alone would let slip: import direction and public surfaces."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mcpstation"

# What each layer may import from mcpstation (besides itself). Faces sit on top, leaves at the bottom.
LEAVES = {"config", "errors"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "config": {"errors"},
    "connection": LEAVES,
    "catalog": LEAVES | {"connection"},
    "policy": LEAVES,
    "store": LEAVES,
    "host": LEAVES | {"connection"},
    "servers": LEAVES | {"policy"},
}


def _layer(path: Path) -> str:
    relative = path.relative_to(SRC)
    return relative.parts[0].removesuffix(".py")


def _imported_layers(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "mcpstation" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_flow_one_way(path: Path):
    layer = _layer(path)
    if layer not in ALLOWED:
        return  # station, calls, dynamic, events, pinning, adapters, gateway, api, cli: the upper layers
    wrong = _imported_layers(path) - ALLOWED[layer] - {layer}
    assert not wrong, f"{path.relative_to(SRC)} ({layer}) imports {sorted(wrong)}"


def _isort_key(name: str) -> tuple[int, str]:
    """Ruff's `__all__` order: CONSTANTS, then Classes, then functions, each alphabetical."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


PACKAGES = sorted(p.parent for p in SRC.rglob("__init__.py") if "migrations" not in p.parts)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(SRC.parent)))
def test_public_surface_is_a_sorted_all(package: Path):
    module_name = ".".join(package.relative_to(SRC.parent).parts)
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        pytest.skip(f"{module_name} exports nothing")
    assert list(exported) == sorted(exported, key=_isort_key), f"{module_name}.__all__ is not sorted"
    for name in exported:
        assert hasattr(module, name), f"{module_name}.__all__ names {name!r}, which it does not define"
