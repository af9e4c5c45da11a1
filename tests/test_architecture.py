"""The house rules that code review alone would let slip: import direction, no cycles, public surfaces.

Every top-level package or module of `mcpstation` is a layer with the layers it may import. Faces
sit on top, leaves at the bottom; a layer missing from the table fails the test, so a new one
has to say where it belongs.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mcpstation"

LEAVES = {"outcomes", "errors", "file_lock", "wire", "_lazy_exports", "per_input"}
_BASE = LEAVES | {"config"}
_PARTS = _BASE | {"catalog", "catalog_cache", "connection", "events", "pinning", "pipeline", "policy", "store", "host"}
_STATION = _PARTS | {
    "roster", "pool", "user_pool", "live_catalog", "status", "dynamic", "follower", "management", "station",
    "codemode", "confirmations",
}  # fmt: skip

# What each layer may import from mcpstation (besides itself), bottom to top.
ALLOWED: dict[str, set[str]] = {
    "outcomes": set(),
    "file_lock": set(),
    "wire": set(),
    "_lazy_exports": set(),
    "per_input": set(),
    "errors": {"outcomes"},
    "config": LEAVES,
    "connection": _BASE,
    "catalog": _BASE | {"connection"},
    "policy": _BASE,
    "store": _BASE,
    "host": _BASE | {"connection", "store"},
    "servers": _BASE | {"policy"},
    "events": _BASE,
    "pinning": _BASE | {"catalog", "connection", "policy", "store"},
    "confirmations": _BASE | {"events", "pipeline"},
    "catalog_cache": _BASE | {"connection", "store"},
    "pipeline": _BASE | {"catalog", "connection", "policy", "store"},
    "identity": _BASE | {"policy", "pipeline"},
    "codemode": _BASE | {"catalog", "pipeline"},
    "roster": _BASE | {"store"},
    "pool": _BASE | {"connection", "events"},
    "user_pool": _BASE | {"connection", "host", "pipeline"},
    "live_catalog": _PARTS | {"pool", "roster"},
    "status": _PARTS | {"pool", "roster"},
    "dynamic": _PARTS | {"pool", "roster", "live_catalog", "status"},
    "management": _PARTS | {"dynamic", "status"},
    "follower": _PARTS | {"dynamic", "live_catalog", "pool", "roster", "status"},
    "station": _STATION,
    "gateway": _STATION,
    "integrations": _STATION,
    "testing": _STATION | {"gateway"},
    "api": _STATION | {"gateway", "identity"},
    "cli": _STATION | {"gateway", "api", "identity", "integrations", "testing"},
    "__init__": _STATION,
    "__main__": {"cli"},
}


def _layer(path: Path) -> str:
    relative = path.relative_to(SRC)
    return relative.parts[0].removesuffix(".py")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, *, typing_too: bool = False) -> set[str]:
    """The mcpstation modules `path` imports at run time, and with `typing_too` also those it imports
    only for the type checker (under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    if not typing_too:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                typing_only.update(id(inner) for inner in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("mcpstation"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("mcpstation"):
                found.add(node.module)
    return found


SOURCES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_flow_one_way(path: Path):
    layer = _layer(path)
    assert layer in ALLOWED, f"{layer!r} is a new layer: add it to ALLOWED in {__file__}"
    imported = {name.split(".")[1] for name in _imports(path) if name.count(".") >= 1}
    wrong = imported - ALLOWED[layer] - {layer}
    assert not wrong, f"{path.relative_to(SRC)} ({layer}) imports {sorted(wrong)}"


def test_no_import_cycles_between_modules_not_even_for_the_type_checker():
    """A circle hidden under `TYPE_CHECKING` is still two modules that know each other: refused too."""
    graph: dict[str, set[str]] = {}
    known = {_module_name(path) for path in SOURCES}
    for path in SOURCES:
        targets = set()
        for name in _imports(path, typing_too=True):
            while name not in known and "." in name:
                name = name.rsplit(".", 1)[0]  # `from pkg.mod import x` where x is not a module
            if name in known:
                targets.add(name)
        module = _module_name(path)
        # a module importing its own package's re-exports is not a circle
        graph[module] = {target for target in targets if target != module and not module.startswith(target + ".")}
    circles = [group for group in _strongly_connected(graph) if len(group) > 1]
    assert not circles, [sorted(group) for group in circles]


def _strongly_connected(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The graph's strongly connected components (Tarjan): each set of modules that reach each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            groups.append(frozenset(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


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


FACES = ("api", "gateway", "cli", "integrations")
_REQUESTS = {"call_tool", "get_prompt", "read_resource", "complete", "subscribe", "unsubscribe"}


@pytest.mark.parametrize("path", [p for p in SOURCES if _layer(p) in FACES], ids=lambda p: str(p.relative_to(SRC)))
def test_faces_send_every_request_with_a_caller(path: Path):
    """A face never relies on the library's default caller: every request names the caller it knows."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _REQUESTS:
            owner = ast.unparse(node.func.value)
            if owner.removeprefix("self.") not in ("station", "station.requests"):
                continue  # an SDK client or session, not ours
            keywords = {k.arg for k in node.keywords}
            assert "caller" in keywords, (
                f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)[:80]} has no caller"
            )
