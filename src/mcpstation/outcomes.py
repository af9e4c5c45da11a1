"""`Outcome`: what became of one request, as a closed set every face reads.

Audit records, metrics labels, CLI exit codes, HTTP status codes and the gateway's JSON-RPC
errors are all derived from this enum (each face keeps its own table, with a test that it covers
every member); nothing inspects an error message to learn what happened.
"""

from __future__ import annotations

import enum


class Outcome(enum.StrEnum):
    """The result of a request, successful or not."""

    OK = "ok"
    TOOL_ERROR = "tool_error"  # the tool ran and reported an error (`isError`)
    REFUSED = "refused"  # a station rule said no: URL guard, pinning, policy
    NOT_FOUND = "not_found"  # no such tool, prompt or resource for this caller
    UNAVAILABLE = "unavailable"  # its server is not running (starting, failed, disabled, pending)
    TIMEOUT = "timeout"  # no answer within the request's timeout; cancelled on the server
    CONNECTION_LOST = "connection_lost"  # the server died while the request was in flight
    REMOTE_ERROR = "remote_error"  # the server answered with a JSON-RPC error
    TOO_LARGE = "too_large"  # the answer is over a hard cap
    INVALID_RESULT = "invalid_result"  # the answer does not fit the protocol or the tool's schema
    CANCELLED = "cancelled"  # the caller gave up
    STORE_DOWN = "store_down"  # not sent: the store that must record it cannot be reached now

    @property
    def ok(self) -> bool:
        return self is Outcome.OK

    def __repr__(self) -> str:
        return f"Outcome.{self.name}"
