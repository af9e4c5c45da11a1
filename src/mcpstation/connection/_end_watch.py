"""A transport's read stream that tells its session when the server's side has ended."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio


class EndWatch:
    """Wraps a read stream; `on_end` runs when it reaches its end (EOF), before the SDK sees it."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    async def __aenter__(self) -> EndWatch:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stream.__aexit__(*exc_info)

    def __aiter__(self) -> EndWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._stream.__anext__()
        except StopAsyncIteration:
            self._on_end()
            raise

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except anyio.EndOfStream:
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    def close(self) -> None:
        self._stream.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
