"""The station's exceptions, split by who must act.

```
StationError                      exit_code 1
├── ConfigError (.path, .line, .key)      2   the operator fixes the config
│   └── MissingVariablesError (.names)    2
├── ServerError (.server)                 3   a server could not be used
│   ├── ServerStartError                  3   it failed to start (command, stderr tail)
│   ├── ServerUnavailable                 3   it is not connected (yet, or any more)
│   ├── ConnectionLost                    3   it died under us ("it died")
│   └── ServerClosed                      3   we stopped it ("we stopped it")
├── CallError (.tool)                     4   a call did not produce a result
│   ├── ToolNotFound (.suggestions)       4
│   ├── CallTimeout                       4
│   ├── MessageTooLarge                   4   the answer is over a hard cap
│   ├── InvalidResult                     4   the answer breaks the protocol or the tool's schema
│   ├── RemoteError (.code)               4   the server answered with a JSON-RPC error
│   └── UpstreamIdentityError (.problem)  4   a server that sees each user cannot see this caller
├── UsageError                            2   the caller misused the API or CLI
└── StoreError                            1   the store (database) refused or failed a change
    ├── StoreConflict (.name)             1   the name is taken (maybe by another station just now)
    └── StoreUnavailable                  1   the database cannot be reached now (down, locked, disk full)
```

Requests never raise `ServerError` or `CallError` at their caller: the pipeline turns them into
a result whose `outcome` is the error class's own `outcome`. The others are raised where an answer
cannot be a result (configuration, start-up, misuse, the CLI).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import ClassVar

from mcpstation.outcomes import Outcome


class StationError(Exception):
    """Root of every error the station raises on purpose."""

    exit_code: int = 1

    @property
    def recorded(self) -> str:
        """The message as the station's own records keep it (the audit, traces), which people other
        than the caller read: the message itself, unless it carries what only the caller may see."""
        return str(self)


class UsageError(StationError):
    """The caller misused the API or the CLI."""

    exit_code = 2


class ConfigError(StationError):
    """A configuration file or value is invalid; names where and what was expected."""

    exit_code = 2

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, key: str | None = None
    ) -> None:
        self.path = path
        self.line = line
        self.key = key
        where = ""
        if path:
            where = path if line is None else f"{path}:{line}"
        prefix = ": ".join(part for part in (where, key) if part)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class MissingVariablesError(ConfigError):
    """One or more `${VAR}` references have no value and no default."""

    def __init__(self, names: Sequence[str], *, path: str | None = None) -> None:
        self.names = tuple(sorted(set(names)))
        listed = ", ".join(self.names)
        super().__init__(f"environment variable(s) not set: {listed}. Set them, or write ${{VAR:-default}}.", path=path)


class ServerError(StationError):
    """A server could not be used."""

    exit_code = 3
    outcome: ClassVar[Outcome] = Outcome.UNAVAILABLE

    def __init__(self, message: str, *, server: str) -> None:
        self.server = server
        super().__init__(message)


class ServerStartError(ServerError):
    """A server failed to start: spawn, connect, initialize or discovery failed or timed out."""


class ServerUnavailable(ServerError):
    """A server is not connected (still starting, backing off, failed or disabled)."""


class ConnectionLost(ServerError):
    """A server's connection died while it was in use."""

    outcome = Outcome.CONNECTION_LOST


class ServerClosed(ServerError):
    """The station stopped this server on purpose."""


class CallError(StationError):
    """A call did not produce a result."""

    exit_code = 4
    outcome: ClassVar[Outcome] = Outcome.REMOTE_ERROR

    def __init__(self, message: str, *, tool: str, server: str | None = None) -> None:
        self.tool = tool
        self.server = server
        super().__init__(message)


class ToolNotFound(CallError):
    """No tool (or prompt, or resource) by that name; carries did-you-mean suggestions."""

    outcome = Outcome.NOT_FOUND

    def __init__(self, name: str, suggestions: Sequence[str] = (), *, kind: str = "tool") -> None:
        self.suggestions = tuple(suggestions)
        hint = f" Did you mean {', '.join(repr(s) for s in self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"no {kind} {name!r}.{hint}", tool=name)


class CallTimeout(CallError):
    """A request took longer than its timeout and was cancelled on the server."""

    outcome = Outcome.TIMEOUT


class MessageTooLarge(CallError):
    """The server's answer is over a hard cap (a message or a result)."""

    outcome = Outcome.TOO_LARGE


class InvalidResult(CallError):
    """The server's answer does not fit the protocol, or the tool's own output schema."""

    outcome = Outcome.INVALID_RESULT


class RemoteError(CallError):
    """The server answered with a JSON-RPC error."""

    def __init__(self, message: str, *, tool: str, server: str | None = None, code: int | None = None) -> None:
        self.code = code
        super().__init__(message, tool=tool, server=server)


class IdentityProblem(enum.StrEnum):
    """Why a server that sees each user (`auth.upstream`) cannot be reached as the caller."""

    NOT_SIGNED_IN = "not_signed_in"  # the caller holds no identity provider token to act on
    NO_TOKEN = "no_token"  # the upstream's authorization server gave no token for the caller
    NEEDS_AUTHORIZATION = "needs_authorization"  # user-oauth: the caller has not authorized it (or it was revoked)


class UpstreamIdentityError(CallError):
    """A server that sees each user cannot be reached as this caller; never retried with other credentials.

    With `authorization_url` (NEEDS_AUTHORIZATION), the message tells the caller to open it. The URL
    carries the sign-in's `state`: whoever opens it completes that caller's sign-in as themselves.
    So it is the caller's alone, and `recorded` (what the audit keeps) says only that the server
    needs their authorization.
    """

    outcome = Outcome.REFUSED

    def __init__(
        self,
        message: str,
        problem: IdentityProblem,
        *,
        tool: str,
        server: str | None = None,
        authorization_url: str | None = None,
    ) -> None:
        """`message` says what is refused and why, without the URL: it is appended to it here."""
        self.problem = problem
        self.authorization_url = authorization_url  # NEEDS_AUTHORIZATION: where the caller authorizes it
        self._recorded = message
        if authorization_url is not None:
            message = f"{message} Open this URL to authorize it, then call again: {authorization_url}"
            self._recorded += " The authorization URL was given to the caller only."
        super().__init__(message, tool=tool, server=server)

    @property
    def recorded(self) -> str:
        return self._recorded


class StoreError(StationError):
    """The store refused a change (a duplicate, a missing row) or its database failed."""

    exit_code = 1


class StoreConflict(StoreError):
    """The store refused a change because the name is taken: by an earlier change, or by another
    station sharing the database that got there first (its database constraint decided)."""

    def __init__(self, message: str, *, name: str) -> None:
        self.name = name
        super().__init__(message)


class StoreUnavailable(StoreError):
    """The store's database cannot be reached now: refused or reset connections, a file that cannot
    be opened, locked past the wait, or a full or read-only disk. Nothing was written; try again
    later (the HTTP faces answer 503 with `Retry-After`)."""
