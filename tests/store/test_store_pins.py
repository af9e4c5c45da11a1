"""Tool pins: first fingerprint kept, a change starts over unapproved, approval audited."""

from __future__ import annotations

import pytest

from mcpstation.errors import StoreError
from mcpstation.store import Store

pytestmark = pytest.mark.anyio


async def test_first_pin_is_unapproved_and_stable(store: Store) -> None:
    assert await store.get_pin("github", "search") is None

    pin = await store.set_pin("github", "search", "sha256:aaa")
    again = await store.set_pin("github", "search", "sha256:aaa")

    assert not pin.is_approved
    assert again == pin
    assert await store.get_pin("github", "search") == pin


async def test_changed_fingerprint_needs_a_new_approval(store: Store) -> None:
    await store.set_pin("github", "search", "sha256:aaa", approved=True)

    changed = await store.set_pin("github", "search", "sha256:bbb")

    assert changed.fingerprint == "sha256:bbb" and not changed.is_approved
    approved = await store.approve_pin("github", "search", actor="alice")
    assert approved.is_approved and approved.fingerprint == "sha256:bbb"
    assert await store.get_pin("github", "search") == approved
    (action,) = await store.list_actions()
    assert (action.action, action.server, action.detail) == (
        "approve_pin",
        "github",
        {"tool": "search", "fingerprint": "sha256:bbb"},
    )


async def test_approving_a_missing_pin_needs_a_fingerprint(store: Store) -> None:
    with pytest.raises(StoreError, match="no pin"):
        await store.approve_pin("github", "search", actor="alice")
    assert await store.list_actions() == ()

    pin = await store.approve_pin("github", "search", actor="alice", fingerprint="sha256:ccc")
    assert pin.is_approved


async def test_pins_list_by_server(store: Store) -> None:
    await store.set_pin("b", "t", "f1")
    await store.set_pin("a", "t2", "f2")
    await store.set_pin("a", "t1", "f3")

    assert [(pin.server, pin.tool) for pin in await store.list_pins()] == [("a", "t1"), ("a", "t2"), ("b", "t")]
    assert [pin.tool for pin in await store.list_pins("a")] == ["t1", "t2"]
