"""The membership verdict and the watchdog's timing, alone (the loop around them is in
test_consumer.py)."""

from __future__ import annotations

from ingest_service.membership import GroupView, Watchdog, stuck

ME = "sparkprov-ingest-me"


def test_the_verdict_compares_the_brokers_view_with_a_member_holding_nothing() -> None:
    idle = GroupView(
        "Stable", {ME: frozenset(), "a": frozenset({0, 1}), "b": frozenset({2})}, {0, 1, 2}
    )
    assert stuck(idle, ME) is None  # more members than partitions: legitimately idle
    assert stuck(GroupView("PreparingRebalance", {}, frozenset({0})), ME) is None
    assert stuck(GroupView("CompletingRebalance", {ME: frozenset({0})}, {0}), ME) is None
    assert "not a member" in (stuck(GroupView("Empty", {}, frozenset({0})), ME) or "")
    assert "not a member" in (stuck(GroupView("Stable", {"a": frozenset({0})}, {0}), ME) or "")
    assert "[0, 1]" in (stuck(GroupView("Stable", {ME: frozenset({0, 1})}, {0, 1}), ME) or "")
    orphaned = GroupView("Stable", {ME: frozenset(), "a": frozenset({0})}, {0, 1, 2})
    assert "[1, 2] have no owner" in (stuck(orphaned, ME) or "")


def test_the_watchdog_waits_for_the_bound_confirms_and_backs_off() -> None:
    w = Watchdog(15.0, probe_every_s=5.0, max_unassigned_s=40.0)
    assert not w.due(0.0, holding=False)
    assert not w.due(14.9, holding=False)
    assert w.due(15.0, holding=False)
    assert not w.observe(15.0, "left out")  # a first verdict is only confirmed by a second
    assert not w.due(19.9, holding=False)
    assert w.due(20.0, holding=False)
    assert w.observe(20.0, "left out")  # recreate; the bound is now 30 s
    assert not w.due(49.9, holding=False)
    assert w.due(50.0, holding=False)
    assert not w.observe(50.0, None)  # fine after all: strikes start again
    assert w.due(55.0, holding=False) and not w.observe(55.0, "left out")
    assert w.due(60.0, holding=False) and w.observe(60.0, "left out")  # bound now 40 s (cap)
    assert not w.due(99.9, holding=False) and w.due(100.0, holding=False)
    # Holding partitions resets everything.
    assert not w.due(101.0, holding=True)
    assert not w.due(102.0, holding=False) and not w.due(116.9, holding=False)
    assert w.due(117.0, holding=False)
