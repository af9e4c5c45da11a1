"""The confirm tier over the HTTP API, on a real socket: a call that opts in (`?confirm=wait`) waits
at `/api/mcp/confirmations` for its caller (or an admin) to answer; to anyone else it does not
exist; no answer in time, or a client that leaves, withdraws it; an answer that lands as the wait
ends is refused as too late, never acknowledged and ignored; without the opt-in the call is
refused as unaskable at once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import httpx2
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from api_helpers import START_TIMEOUT_S, RunningApi, running_api, sse_events
from station_helpers import inproc

from mcpstation import Caller, Face, Role
from mcpstation.confirmations import Answered
from mcpstation.events import StationEvent

pytestmark = pytest.mark.anyio

CALL = "/api/mcp/tools/mcp_demo_add/call"
LIST = "/api/mcp/confirmations"
WAIT = {"confirm": "wait"}
ARGUMENTS = {"a": 2, "b": 3}


ADMIN = Caller("admin", Role.ADMIN, Face.LIBRARY)  # answers any question through the station itself


def confirming(timeout_s: float = 120.0) -> dict[str, Any]:
    return {"confirm_tools": ["demo/add"], "confirm_timeout_s": timeout_s}


async def next_question(events: MemoryObjectReceiveStream[StationEvent], state: str) -> dict[str, Any]:
    """The next `confirmation` event in `state` the station publishes (its data)."""
    async for event in events:
        if event.kind == "confirmation" and event.data["state"] == state:
            return event.data
    raise AssertionError("the station's events ended")


async def other_user(api: RunningApi) -> httpx2.AsyncClient:
    token, _ = await api.store.create_token("other-token", "user")
    return api.client(headers={"Authorization": f"Bearer {token}"})


async def test_an_opted_in_call_waits_for_its_caller_and_a_yes_runs_it(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with (
            running_api(tmp_path, [inproc("demo")], policy=confirming()) as api,
            api.client("user") as user,
            api.client("admin") as admin,
            await other_user(api) as other,
            other.stream("GET", "/api/events") as other_stream,
            user.stream("GET", "/api/events") as user_stream,
        ):
            other_events, user_events = sse_events(other_stream.aiter_lines()), sse_events(user_stream.aiter_lines())
            assert (await anext(other_events))[0] == (await anext(user_events))[0] == "snapshot"  # both subscribed
            answers: list[httpx2.Response] = []
            with api.station.events.subscribe() as events:
                async with anyio.create_task_group() as group:

                    async def call() -> None:
                        answers.append(await user.post(CALL, params=WAIT | {"confirm_tag": "mine"}, json=ARGUMENTS))

                    group.start_soon(call)
                    asked = await next_question(events, "asked")
                    assert not answers, "the call waits for the answer"

                    [listed] = (await user.get(LIST)).json()["confirmations"]
                    assert listed["id"] == asked["id"] and len(listed["id"]) >= 32
                    assert (listed["name"], listed["server"], listed["tool"], listed["tag"]) == (
                        "mcp_demo_add", "demo", "add", "mine",
                    )  # fmt: skip
                    assert listed["caller"] == "api:user-token"
                    assert (
                        listed["text"]
                        == "Run 'mcp_demo_add' (server 'demo') for api:user-token with {\"a\": 2, \"b\": 3}?"
                    )
                    assert [
                        q["id"] for q in (await user.get(LIST, params={"tag": "mine"})).json()["confirmations"]
                    ] == [asked["id"]]
                    assert (await user.get(LIST, params={"tag": "theirs"})).json()["confirmations"] == []
                    assert [q["id"] for q in (await admin.get(LIST)).json()["confirmations"]] == [asked["id"]]

                    # Another user neither sees it nor can answer it, and cannot tell it from an id never issued.
                    assert (await other.get(LIST)).json() == {"confirmations": []}
                    theirs = await other.post(f"{LIST}/{asked['id']}", json={"approve": True})
                    never = await other.post(f"{LIST}/{'x' * len(asked['id'])}", json={"approve": True})
                    assert theirs.status_code == never.status_code == 404
                    assert theirs.json()["type"] == never.json()["type"] == "NotFound"
                    assert not answers and len(api.station.confirmations) == 1

                    answered = await user.post(f"{LIST}/{asked['id']}", json={"approve": True})
                    assert answered.status_code == 200
                    assert answered.json() == {
                        "id": asked["id"], "name": "mcp_demo_add", "approved": True,
                        "message": "the call of 'mcp_demo_add' runs",
                    }  # fmt: skip
                    assert (await next_question(events, "approved"))["id"] == asked["id"]
            [result] = answers
            assert result.status_code == 200 and result.json()["ok"] and result.json()["text"] == "5"
            assert (await user.get(LIST)).json() == {"confirmations": []} and len(api.station.confirmations) == 0
            again = await user.post(f"{LIST}/{asked['id']}", json={"approve": False})
            assert again.status_code == 404, "an answered question is gone"

            # The asking caller's own event stream showed it; the other user's did not (up to a later event).
            async for kind, data in user_events:
                if kind == "confirmation" and data["state"] == "approved":
                    assert data["id"] == asked["id"]
                    break
            assert (await admin.post("/api/mcp/servers/demo/reconnect")).json()["ok"]
            async for kind, data in other_events:
                assert kind != "confirmation", data
                if kind == "state" and data["server"] == "demo":
                    break

            audit = (await admin.get("/api/mcp/audit", params={"kind": "actions"})).json()["actions"]
            [action] = [a for a in audit if a["action"] == "answer-confirmation"]
            assert (action["actor"], action["server"]) == ("api:user-token", "demo")
            assert action["detail"] == {"tool": "mcp_demo_add", "caller": "api:user-token", "approved": True}


async def test_an_admins_no_refuses_the_waiting_call_as_denied(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with (
            running_api(tmp_path, [inproc("demo")], policy=confirming()) as api,
            api.client("user") as user,
            api.client("admin") as admin,
        ):
            answers: list[httpx2.Response] = []
            with api.station.events.subscribe() as events:
                async with anyio.create_task_group() as group:

                    async def call() -> None:
                        answers.append(await user.post(CALL, params=WAIT, json=ARGUMENTS))

                    group.start_soon(call)
                    asked = await next_question(events, "asked")
                    answered = await admin.post(f"{LIST}/{asked['id']}", json={"approve": False})
                    assert answered.status_code == 200 and answered.json()["approved"] is False
            [result] = answers
            body = result.json()
            assert (body["ok"], body["outcome"], body["structured"]["confirmation"]) == (False, "refused", "denied")
            assert "the call was declined" in body["error"]
            assert len(api.station.confirmations) == 0
            audit = (await admin.get("/api/mcp/audit", params={"kind": "actions"})).json()["actions"]
            [action] = [a for a in audit if a["action"] == "answer-confirmation"]
            assert action["actor"] == "api:admin-token" and action["detail"]["approved"] is False


async def test_no_answer_in_time_refuses_the_call_as_unanswered_and_withdraws_the_question(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with (
            running_api(tmp_path, [inproc("demo")], policy=confirming(timeout_s=1.0)) as api,
            api.client("user") as user,
        ):
            with api.station.events.subscribe() as events:
                result = await user.post(CALL, params=WAIT, json=ARGUMENTS)
                asked = await next_question(events, "asked")
                withdrawn = await next_question(events, "withdrawn")
            assert withdrawn["id"] == asked["id"]
            body = result.json()
            assert (body["outcome"], body["structured"]["confirmation"]) == ("refused", "unanswered")
            assert "nobody answered in 1 s" in body["error"]
            assert (await user.get(LIST)).json() == {"confirmations": []} and len(api.station.confirmations) == 0
            late = await user.post(f"{LIST}/{asked['id']}", json={"approve": True})
            assert late.status_code == 404


async def test_without_the_opt_in_the_call_is_refused_at_once_as_unaskable(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with (
            running_api(tmp_path, [inproc("demo")], policy=confirming()) as api,
            api.client("user") as user,
        ):
            result = (await user.post(CALL, json=ARGUMENTS)).json()
            assert (result["outcome"], result["structured"]["confirmation"]) == ("refused", "unaskable")
            assert "Fix: call it with `?confirm=wait`, then answer it" in result["error"]
            assert "POST /api/mcp/confirmations/{id}" in result["error"]
            assert len(api.station.confirmations) == 0
            plain = await user.post("/api/mcp/tools/mcp_demo_echo/call", params=WAIT, json={"message": "hi"})
            assert plain.json()["ok"], "a tool outside the tier runs whatever the opt-in says"
            wrong = await user.post(CALL, params={"confirm": "yes"}, json=ARGUMENTS)
            assert wrong.status_code == 400 and "confirm must be 'wait'" in wrong.json()["message"]
            lone_tag = await user.post(CALL, params={"confirm_tag": "mine"}, json=ARGUMENTS)
            assert lone_tag.status_code == 400 and "confirm=wait" in lone_tag.json()["message"]
            bad_tag = await user.post(CALL, params=WAIT | {"confirm_tag": "a b"}, json=ARGUMENTS)
            assert bad_tag.status_code == 400


async def test_a_call_whose_client_leaves_withdraws_its_question(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with (
            running_api(tmp_path, [inproc("demo")], policy=confirming()) as api,
            api.client("user") as user,
        ):
            with api.station.events.subscribe() as events:
                async with anyio.create_task_group() as group:
                    leaving = anyio.CancelScope()

                    async def call() -> None:
                        with leaving:
                            await user.post(CALL, params=WAIT, json=ARGUMENTS)

                    group.start_soon(call)
                    asked = await next_question(events, "asked")
                    assert len(api.station.confirmations) == 1
                    leaving.cancel()  # the client gives up: its connection closes
                    withdrawn = await next_question(events, "withdrawn")
            assert withdrawn["id"] == asked["id"]
            assert (await user.get(LIST)).json() == {"confirmations": []} and len(api.station.confirmations) == 0
            assert (await user.post(f"{LIST}/{asked['id']}", json={"approve": True})).status_code == 404


async def test_an_answer_that_lands_as_the_wait_times_out_is_taken_or_refused_never_ignored(tmp_path: Path):
    timeout_s = 1.0
    with anyio.fail_after(START_TIMEOUT_S):
        async with (
            running_api(tmp_path, [inproc("demo")], policy=confirming(timeout_s=timeout_s)) as api,
            api.client("user") as user,
            api.client("admin") as admin,
        ):
            answers: list[httpx2.Response] = []
            with api.station.events.subscribe() as events:
                async with anyio.create_task_group() as group:

                    async def call() -> None:
                        answers.append(await user.post(CALL, params=WAIT, json=ARGUMENTS))

                    group.start_soon(call)
                    asked = await next_question(events, "asked")
                    # The loop stands still past the wait's deadline, so its timer is due but has not fired;
                    # this task is scheduled ahead of it in the next step, and the answer lands in that step.
                    time.sleep(timeout_s + 0.2)  # noqa: ASYNC251 (the loop must not run meanwhile)
                    await anyio.lowlevel.checkpoint()
                    answered = await api.station.answer_confirmation(ADMIN, asked["id"], approve=True)
            [result] = answers
            body = result.json()
            audit = (await admin.get("/api/mcp/audit", params={"kind": "actions"})).json()["actions"]
            audited = [a for a in audit if a["action"] == "answer-confirmation"]
            if answered is not None and answered[1] is Answered.TAKEN:  # the answer won: the call ran, on record
                assert body["ok"] and body["text"] == "5", body
                assert [a["detail"]["approved"] for a in audited] == [True]
            else:  # the wait's end won: the answerer is told so, the call refused as unanswered, nothing audited
                assert (body["outcome"], body["structured"]["confirmation"]) == ("refused", "unanswered"), body
                assert audited == [], "a refused answer is not audited as given"
            assert len(api.station.confirmations) == 0


async def test_an_answer_that_lands_after_the_timeout_fired_is_refused_as_too_late(tmp_path: Path):
    timeout_s, margin_s = 1.0, 0.2
    with anyio.fail_after(START_TIMEOUT_S):
        async with (
            running_api(tmp_path, [inproc("demo")], policy=confirming(timeout_s=timeout_s)) as api,
            api.client("user") as user,
            api.client("admin") as admin,
        ):
            asked_at: list[float] = []  # the loop's clock as the wait began (its deadline is timeout_s on)
            stop_listening = api.station.events.add_listener(
                lambda event: asked_at.append(anyio.current_time()) if event.kind == "confirmation" else None
            )
            answers: list[httpx2.Response] = []
            late: list[Any] = []
            with api.station.events.subscribe() as events:
                async with anyio.create_task_group() as group:

                    async def call() -> None:
                        answers.append(await user.post(CALL, params=WAIT, json=ARGUMENTS))

                    async def answer(asked_id: str, *, task_status: anyio.abc.TaskStatus[None]) -> None:
                        task_status.started()
                        await anyio.sleep_until(asked_at[0] + timeout_s - margin_s)  # just before the deadline
                        late.append(await api.station.answer_confirmation(ADMIN, asked_id, approve=True))

                    group.start_soon(call)
                    asked = await next_question(events, "asked")
                    await group.start(answer, asked["id"])
                    # The loop stands still past both timers: in its next step the answer's fires, then the
                    # wait's (which cancels the waiting call), and only then does the answering task run.
                    time.sleep(timeout_s + 0.5)  # noqa: ASYNC251 (the loop must not run meanwhile)
            stop_listening()
            [(pending, fate)] = late
            assert pending.id == asked["id"] and fate is Answered.TOO_LATE
            [result] = answers
            body = result.json()
            assert (body["outcome"], body["structured"]["confirmation"]) == ("refused", "unanswered"), body
            audit = (await admin.get("/api/mcp/audit", params={"kind": "actions"})).json()["actions"]
            assert [a for a in audit if a["action"] == "answer-confirmation"] == []
            assert len(api.station.confirmations) == 0
