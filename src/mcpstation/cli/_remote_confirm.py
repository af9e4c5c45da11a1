"""A call through the running station that the person at the terminal may be asked about.

`mcpstation call` on a terminal opts in (`?confirm=wait`, with a tag of its own): if the tool is in
`[policy] confirm_tools`, the running station keeps the call's question for an answer at
`/api/mcp/confirmations` and announces it as a `confirmation` event, and the call waits. Here the
station's event stream is followed while the call runs; the question bearing our tag is asked
y/N on the terminal (`Confirm`, the same terminal asking as a one-shot call's) and the answer
posted. A stream that fell behind and lost events says so (a `lost` event): the questions bearing
our tag are then listed again, so none waits unseen; each is asked once. The call's own answer
(run, declined, unanswered) ends it all; a command that ends first (Ctrl-C) closes its
connections, and the station withdraws the question and cancels the call.

The rest of `RemoteView` is loop-free on the standard library's `http.client`
(`cli/_control_client.py` says why). Two things happen at once here, so this module runs an event
loop with an async client over the same socket: httpx2, which the station's own dependencies
bring. It is imported only when there is a terminal to ask on, which already loads the terminal
asking (and anyio) for it.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2

from mcpstation.cli._control_client import (
    CONNECT_TIMEOUT_S,
    CONTROL_HOST,
    REPLY_TIMEOUT_S,
    RemoteFailure,
    RemoteStation,
    Reply,
    StationGone,
    path_segment,
)
from mcpstation.cli._control_transport import control_transport
from mcpstation.cli._view import Confirm, Shape
from mcpstation.wire import ANSWER_TOO_LATE, CONFIRM_WAIT, CONFIRMATION_EVENT, LOST_EVENT, QuestionState

logger = logging.getLogger("mcpstation.cli")

EVENTS_PATH = "/api/events"
CONFIRMATIONS_PATH = "/api/mcp/confirmations"
TAG_BYTES = 12  # of randomness in this command's tag: no other command's questions bear it


def call_confirming(
    station: RemoteStation, path: str, arguments: Shape, params: dict[str, str], confirm: Confirm
) -> Reply:
    """POST the call at `path` with `params`, asking `confirm` about each question the station has
    about it while it runs; the call's answer. Blocks until then (its own event loop).

    Raises:
        StationGone: nothing listens on the socket any more; the call was not sent.
        RemoteFailure: no (JSON) answer came back.
    """
    try:
        return anyio.run(_call, station, path, arguments, params, confirm)
    except* httpx2.ConnectError as gone:
        raise StationGone(str(gone.exceptions[0])) from None
    except* httpx2.TimeoutException:
        raise RemoteFailure(
            f"the running station ({station.path}) did not answer within {REPLY_TIMEOUT_S:.0f} s"
        ) from None
    except* httpx2.HTTPError as lost:
        raise RemoteFailure(
            f"lost the connection to the running station ({station.path}): {lost.exceptions[0]!r}"
        ) from None


async def _call(station: RemoteStation, path: str, arguments: Shape, params: dict[str, str], confirm: Confirm) -> Reply:
    tag = secrets.token_urlsafe(TAG_BYTES)
    params = params | {"confirm": CONFIRM_WAIT, "confirm_tag": tag}
    transport = control_transport(station.path)
    timeout = httpx2.Timeout(REPLY_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    async with (
        httpx2.AsyncClient(
            transport=transport, base_url=f"http://{CONTROL_HOST}", headers=station.headers, timeout=timeout
        ) as client,
        client.stream("GET", EVENTS_PATH) as events,
    ):
        lines = events.aiter_lines()
        await anext(lines, None)  # `retry: ...`, sent once the stream follows the events: ours cannot be missed
        async with anyio.create_task_group() as group:
            group.start_soon(_answer_questions, client, lines, tag, confirm)
            response = await client.post(path, json=arguments, params=params)
            group.cancel_scope.cancel()  # the call is over: a question still asked is given up
    try:
        return Reply(response.status_code, response.json())
    except ValueError:
        raise RemoteFailure(
            f"the running station answered POST {path} with {response.status_code} and no JSON"
        ) from None


async def _answer_questions(client: httpx2.AsyncClient, lines: AsyncIterator[str], tag: str, confirm: Confirm) -> None:
    """Ask the person each question of ours as the station announces it (or, after the stream lost
    events, as it lists them), once each, and send the answer."""
    asked: set[str] = set()
    try:
        async for kind, event in _events(lines):
            if kind == CONFIRMATION_EVENT and event.get("tag") == tag and event.get("state") == QuestionState.ASKED:
                questions = [event]
            elif kind == LOST_EVENT:  # one of ours may be among the lost: ask the station which wait
                listed = await client.get(CONFIRMATIONS_PATH, params={"tag": tag})
                questions = listed.json().get("confirmations", []) if listed.status_code == 200 else []
            else:
                continue
            for question in questions:
                question_id = str(question["id"])
                if question_id in asked:
                    continue
                asked.add(question_id)
                approve = await confirm(str(question["text"]))
                answered = await client.post(
                    f"{CONFIRMATIONS_PATH}/{path_segment(question_id)}", json={"approve": approve}
                )
                if answered.status_code == 404 or (
                    answered.status_code == 409 and answered.json().get("type") == ANSWER_TOO_LATE
                ):  # the wait ended first (nobody answered in time): the call says so
                    logger.info("the question was withdrawn before the answer arrived")
    except httpx2.HTTPError as exc:
        # Nobody can be asked any more; the call's own answer (or its failure) tells the rest.
        logger.info("stopped following the running station's events: %r", exc)


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The events (kind and data) from the Server-Sent Events' lines (`event:`, `data:`, blank)."""
    kind: str | None = None
    data: list[str] = []
    async for line in lines:
        if line.startswith("event:"):
            kind = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data.append(line.removeprefix("data:").removeprefix(" "))
        elif not line:
            if kind is not None and data:
                event = json.loads("\n".join(data))
                if isinstance(event, dict):
                    yield kind, event
            kind, data = None, []
