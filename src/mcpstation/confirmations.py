"""`PendingQuestions`: confirm-tier questions waiting for a person's answer over the HTTP API.

The confirm tier (`pipeline/confirm.py`) asks a face's `Ask` before each call of a tool in
`[policy] confirm_tools`. An HTTP API call that opts in (`?confirm=wait`) gets `asker()`'s: its
`Question` is kept here under an unguessable id, announced as a `confirmation` station event, and
the call waits until someone allowed to answers it (`answer`). The confirm layer bounds the wait
(`confirm_timeout_s`); a call cancelled meanwhile (its client went away) stops waiting too. Every
way out removes the question, and each change is announced: `asked`, then `approved`, `denied` or
`withdrawn` (nobody answered: the wait ended).

An answer counts once the waiting call has taken it: `answer` hands it over and returns what the
call did with it at its next step. An answer that lands as the wait ends (the bound passed, the
call was cancelled) is `TOO_LATE`: the call was refused as unanswered and the answer is not taken.

Who may see and answer a question: the caller who made the call (the same `Caller.key`), or an
admin. To anyone else it does not exist; its events go to admins and that caller only.
"""

from __future__ import annotations

import enum
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcpstation.config.models import Role
from mcpstation.events import EventHub, StationEvent
from mcpstation.pipeline import Ask, Caller, Question
from mcpstation.wire import CONFIRMATION_EVENT, QuestionState

ID_BYTES = 24  # of randomness in a question's id: unguessable, so the id alone says nothing
TAG_MAX_CHARS = 64  # a client's label for its own questions
ANSWER_ACTION = "answer-confirmation"  # an answer, as the audit's management actions name it


SETTLE_S = 5.0  # a waiting call takes a handed answer at its task's next step: longer means a stuck loop


class Answered(enum.StrEnum):
    """What became of an answer handed to a waiting call."""

    TAKEN = "taken"  # the call took it: it runs, or is refused as declined
    TOO_LATE = "too-late"  # the wait ended as it came: the call was refused as unanswered


@dataclass(frozen=True, slots=True)
class PendingQuestion:
    """A question waiting for an answer: its id, what it asks, since when, and the asking client's tag."""

    id: str
    question: Question
    asked_at: float
    tag: str | None = None

    def to_dict(self) -> dict[str, Any]:
        q = self.question
        return {
            "id": self.id,
            "name": q.name,
            "server": q.server,
            "tool": q.tool,
            "caller": q.caller.actor,
            "text": q.text(),
            "via": str(q.via) if q.via is not None else None,
            "run_id": q.run_id,
            "tag": self.tag,
            "asked_at": self.asked_at,
        }


@dataclass(slots=True)
class _Waiting:
    pending: PendingQuestion
    answered: anyio.Event = field(default_factory=anyio.Event)  # an answer was handed over
    settled: anyio.Event = field(default_factory=anyio.Event)  # the wait is over, the answer taken or not
    approved: bool = False
    taken: bool = False


def may_answer(caller: Caller, question: Question) -> bool:
    """Whether `caller` may see and answer `question`: the caller who asked, or an admin."""
    return caller.sees(Role.ADMIN) or caller.key == question.caller.key


class PendingQuestions:
    """The station's questions waiting for an answer over the API, by id; each change published on `events`."""

    def __init__(self, events: EventHub) -> None:
        self._events = events
        self._waiting: dict[str, _Waiting] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    def asker(self, tag: str | None = None) -> Ask:
        """An `Ask` that keeps each question here until it is answered or the wait ends; `tag` (the
        client's label, at most `TAG_MAX_CHARS`) is shown with it, so a client can find its own."""
        if tag is not None and len(tag) > TAG_MAX_CHARS:
            raise ValueError(f"a question's tag is at most {TAG_MAX_CHARS} characters")

        async def ask(question: Question) -> bool:
            return await self._wait(PendingQuestion(secrets.token_urlsafe(ID_BYTES), question, time.time(), tag))

        return ask

    async def _wait(self, pending: PendingQuestion) -> bool:
        waiting = _Waiting(pending)
        self._waiting[pending.id] = waiting
        self._announce(pending, QuestionState.ASKED)
        try:
            await waiting.answered.wait()
            waiting.taken = True
            return waiting.approved
        finally:
            # Not taken: nobody answered, or the answer came as the wait ended (the confirm layer's
            # bound passed, or the call was cancelled); either way the call goes unanswered.
            self._waiting.pop(pending.id, None)
            if not waiting.taken:
                state = QuestionState.WITHDRAWN
            else:
                state = QuestionState.APPROVED if waiting.approved else QuestionState.DENIED
            waiting.settled.set()
            self._announce(pending, state)

    def visible_to(self, caller: Caller) -> list[PendingQuestion]:
        """The questions `caller` may answer, oldest first."""
        return [w.pending for w in self._waiting.values() if may_answer(caller, w.pending.question)]

    def find(self, caller: Caller, question_id: str) -> PendingQuestion | None:
        """The question `question_id` if it waits and `caller` may answer it, else None (whichever is not so)."""
        waiting = self._waiting.get(question_id)
        if waiting is None or not may_answer(caller, waiting.pending.question):
            return None
        return waiting.pending

    async def answer(
        self, caller: Caller, question_id: str, *, approve: bool
    ) -> tuple[PendingQuestion, Answered] | None:
        """Hand an answer to the call waiting on a question `caller` may answer, and wait (one step
        of that call's task) for what it did with it: taken (it runs, or is refused, by `approve`),
        or too late. None when no such question waits for this caller (never asked, answered,
        withdrawn, or not theirs).

        Raises:
            TimeoutError: the waiting call did not take it within `SETTLE_S` (the event loop is stuck).
        """
        if self.find(caller, question_id) is None:
            return None
        waiting = self._waiting.pop(question_id)
        waiting.approved = approve
        waiting.answered.set()
        with anyio.fail_after(SETTLE_S, shield=True):  # handed over: the answerer learns its fate even if it leaves
            await waiting.settled.wait()
        return waiting.pending, Answered.TAKEN if waiting.taken else Answered.TOO_LATE

    def _announce(self, pending: PendingQuestion, state: QuestionState) -> None:
        data = {"state": str(state), **pending.to_dict()}
        event = StationEvent(CONFIRMATION_EVENT, pending.question.server, data, audience=pending.question.caller.key)
        self._events.publish(event)
