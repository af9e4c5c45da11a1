"""Tool names every provider accepts, and the way back to the catalog's names.

The catalog's public names already match `^[A-Za-z0-9_-]{1,64}$`, which OpenAI and Anthropic
take as they are. Gemini also wants a letter or an underscore first. A name that must change gets
the smallest change; when that collides with another tool's name, it ends in a hash of the
original instead (never depending on which tools came first), and the collision is reported.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

MAX_NAME_LENGTH: Final = 64
HASH_LENGTH: Final = 8  # hex digits of sha256 that make a changed name unique

_RULES: Final[dict[str, tuple[re.Pattern[str], re.Pattern[str], str]]] = {
    # provider: (a valid name, characters to replace, prefix when the first character may not start a name)
    "openai": (re.compile(r"^[A-Za-z0-9_-]{1,64}$"), re.compile(r"[^A-Za-z0-9_-]"), ""),
    "anthropic": (re.compile(r"^[A-Za-z0-9_-]{1,64}$"), re.compile(r"[^A-Za-z0-9_-]"), ""),
    "gemini": (re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"), re.compile(r"[^A-Za-z0-9_.:-]"), "_"),
    "json": (re.compile(r"^.+$", re.DOTALL), re.compile(r"(?!)"), ""),
}


@dataclass(frozen=True, slots=True)
class NameCollision:
    catalog: str
    provider: str  # the name it would have had, already another tool's

    def to_dict(self) -> dict[str, str]:
        return {"catalog": self.catalog, "provider": self.provider}


@dataclass(frozen=True, slots=True)
class ToolNames:
    """A reversible map between catalog names and one provider's names."""

    provider: str
    to_provider: Mapping[str, str]
    to_catalog: Mapping[str, str]
    collisions: tuple[NameCollision, ...] = ()

    def outgoing(self, catalog_name: str) -> str:
        return self.to_provider.get(catalog_name, catalog_name)

    def incoming(self, provider_name: str) -> str:
        """The catalog name of a name the model used; an unknown name is passed on as it is (the
        station then answers "no such tool", with suggestions)."""
        return self.to_catalog.get(provider_name, provider_name)


def is_valid(name: str, provider: str) -> bool:
    return _RULES[provider][0].match(name) is not None


def provider_names(names: Iterable[str], provider: str) -> ToolNames:
    """Names for `provider` of the catalog's `names`: unchanged where valid, else made valid.

    Raises:
        ValueError: `provider` is not one of openai, anthropic, gemini, json.
    """
    if provider not in _RULES:
        raise ValueError(f"no naming rules for provider {provider!r}; known: {', '.join(sorted(_RULES))}")
    valid, unsafe, prefix = _RULES[provider]
    ordered = list(dict.fromkeys(names))
    out = {name: name for name in ordered if valid.match(name)}
    taken = set(out.values())
    collisions: list[NameCollision] = []
    for name in sorted(name for name in ordered if name not in out):
        candidate = _fitted(name, unsafe, prefix, valid)
        if candidate in taken:
            collisions.append(NameCollision(name, candidate))
            candidate = _hashed(candidate, name)
        out[name] = candidate
        taken.add(candidate)
    return ToolNames(provider, out, {rendered: name for name, rendered in out.items()}, tuple(collisions))


def _fitted(name: str, unsafe: re.Pattern[str], prefix: str, valid: re.Pattern[str]) -> str:
    safe = unsafe.sub("_", name) or "_"
    if prefix and not valid.match(safe[:1] + "a"):
        safe = prefix + safe
    if len(safe) > MAX_NAME_LENGTH:
        safe = _hashed(safe, name)
    return safe


def _hashed(safe: str, original: str) -> str:
    digest = hashlib.sha256(original.encode()).hexdigest()[:HASH_LENGTH]
    return f"{safe[: MAX_NAME_LENGTH - HASH_LENGTH - 1]}_{digest}"
