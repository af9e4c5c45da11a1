"""The command line's exit codes: 0 ok · 2 bad config or usage · 3 no server reachable · 4 the call failed.

A station error carries its own (`exit_code` on the error class); a request's outcome maps here;
an error answer of the running station maps by its typed kind, never by its message.
"""

from __future__ import annotations

from mcpstation import errors
from mcpstation.outcomes import Outcome

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_NO_SERVER = 3
EXIT_CALL_FAILED = 4

# The exit code of a request's outcome: 3 when its server is not there to answer, 4 when it answered no.
OUTCOME_EXIT: dict[Outcome, int] = {
    Outcome.OK: EXIT_OK,
    Outcome.TOOL_ERROR: EXIT_CALL_FAILED,
    Outcome.REFUSED: EXIT_CALL_FAILED,
    Outcome.NOT_FOUND: EXIT_CALL_FAILED,
    Outcome.UNAVAILABLE: EXIT_NO_SERVER,
    Outcome.TIMEOUT: EXIT_CALL_FAILED,
    Outcome.CONNECTION_LOST: EXIT_NO_SERVER,
    Outcome.REMOTE_ERROR: EXIT_CALL_FAILED,
    Outcome.TOO_LARGE: EXIT_CALL_FAILED,
    Outcome.INVALID_RESULT: EXIT_CALL_FAILED,
    Outcome.CANCELLED: EXIT_CALL_FAILED,
    Outcome.STORE_DOWN: EXIT_CALL_FAILED,
}


def exit_code_of_answer(error_type: str, status: int, outcome: Outcome | None) -> int:
    """The exit code of the running station's error answer: its outcome's, else its error class's,
    else its HTTP status's."""
    if outcome is not None:
        return OUTCOME_EXIT[outcome]
    error_class = getattr(errors, error_type, None)
    if isinstance(error_class, type) and issubclass(error_class, errors.StationError):
        return error_class.exit_code
    if status in (400, 413, 422):
        return EXIT_USAGE
    if status == 404:
        return EXIT_CALL_FAILED
    return 1
