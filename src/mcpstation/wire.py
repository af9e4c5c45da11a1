"""Words of the HTTP API that its light clients (the CLI) send and read, in a module that imports nothing.

The station's side (`confirmations.py`, `api/`) and the CLI's (`cli/_remote_confirm.py`) both take
them from here, so the CLI names them without loading the pipeline or Starlette.
"""

from __future__ import annotations

import enum
from typing import Final

CONFIRM_WAIT = "wait"  # `?confirm=wait`: a confirm-tier call waits for an answer at /api/mcp/confirmations
CONFIRMATION_EVENT: Final = "confirmation"  # the event kind of a question's every change
LOST_EVENT = "lost"  # the event stream's notice that it fell behind and lost events (`lost`: how many so far)
ANSWER_TOO_LATE = "AnswerTooLate"  # the error type (409) of an answer that came as the wait ended


class QuestionState(enum.StrEnum):
    """Where a question is (the `state` of its `confirmation` events)."""

    ASKED = "asked"  # waiting for an answer
    APPROVED = "approved"  # answered yes: the call runs
    DENIED = "denied"  # answered no: the call is refused
    WITHDRAWN = "withdrawn"  # no answer taken: the wait ended (timed out, or the call was cancelled)
