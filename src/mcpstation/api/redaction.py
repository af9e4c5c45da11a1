"""The last line of defence for secrets: every JSON body and event the API sends is scrubbed of
the secret values (`SecretStr` fields: env, headers, bearer tokens, OAuth secrets) of every server
the station knows, and of the spec a request carried. The station already keeps them out of its
statuses and messages; this catches what a server echoes back (stderr tails, error texts).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel, SecretStr

from mcpstation.station import Station

MIN_SECRET_CHARS = 6  # shorter values would scrub ordinary text; they are not worth stealing anyway
MASK = "**********"


def secret_values(value: Any) -> Iterator[str]:
    """Every `SecretStr` value inside a model, mapping or sequence, recursively."""
    if isinstance(value, SecretStr):
        yield value.get_secret_value()
    elif isinstance(value, BaseModel):
        for field in type(value).model_fields:
            yield from secret_values(getattr(value, field))
    elif isinstance(value, dict):
        for item in value.values():
            yield from secret_values(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from secret_values(item)


class Redactor:
    """Scrubs the station's current secret values out of text."""

    def __init__(self, station: Station) -> None:
        self.station = station

    def secrets(self, extra: Iterable[str] = ()) -> list[str]:
        found: set[str] = set(extra)
        for spec in self.station.config.servers:
            found.update(secret_values(spec))
        for connection in self.station.connections.values():
            found.update(secret_values(connection.spec))
        # As written in JSON too (quotes, backslashes, non-ASCII escaped), and longest first, so a
        # secret containing another is masked whole.
        forms = {form for s in found if len(s) >= MIN_SECRET_CHARS for form in (s, json.dumps(s)[1:-1])}
        return sorted(forms, key=len, reverse=True)

    def scrub(self, text: str, extra: Iterable[str] = ()) -> str:
        for secret in self.secrets(extra):
            if secret in text:
                text = text.replace(secret, MASK)
        return text
