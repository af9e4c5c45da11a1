"""The roster's own rules: static entries in config order, and what a reload does to the servers they shadow."""

from __future__ import annotations

from mcpstation.config.models import StdioServerSpec
from mcpstation.roster import Origin, RosterEntry, ServerRoster, Standing


def spec(name: str, *, enabled: bool = True) -> StdioServerSpec:
    return StdioServerSpec(name=name, command="true", enabled=enabled)


def test_static_entries_keep_config_order_and_disabled_ones_are_held() -> None:
    roster = ServerRoster()
    roster.put(RosterEntry(spec("stored"), Origin.DYNAMIC))
    roster.put_static([spec("b"), spec("a", enabled=False)])
    assert [(e.name, e.standing) for e in roster] == [
        ("b", Standing.ACTIVE), ("a", Standing.DISABLED), ("stored", Standing.ACTIVE),
    ]  # fmt: skip


def test_a_reload_shadows_a_stored_server_and_gives_its_name_back_when_the_static_one_goes() -> None:
    roster = ServerRoster()
    roster.put_static([spec("a")])
    roster.put(RosterEntry(spec("shared"), Origin.DYNAMIC))

    assert roster.apply_static([spec("a"), spec("shared")]) == ["shared"]
    entry = roster.get("shared")
    assert entry is not None and entry.origin is Origin.STATIC and entry.shadowed is not None
    assert entry.shadowed.standing is Standing.SHADOWED and "static config wins" in (entry.shadowed.reason or "")

    assert roster.apply_static([spec("a")]) == []
    back = roster.get("shared")
    assert back is not None and (back.origin, back.standing) == (Origin.DYNAMIC, Standing.SHADOWED)
    assert "connects at the next start" in (back.reason or "")
