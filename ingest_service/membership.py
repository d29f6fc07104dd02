"""Whether this process silently lost its place in the consumer group, and when to ask.

kafka-python 3.0.12 (the latest release) can leave a consumer without partitions for good while
the process looks alive. The group leader rejoins when its topic metadata changes (at start, its
first assignment often runs before the topic's metadata arrived: "No partition metadata for
topic"). That rejoin runs as a task on the IO thread; if the ``poll()`` that started it times out
first, the task stays in flight for the next poll to await. But the task's own assignment step
records the new metadata as assigned, so the next poll finds nothing to rejoin for and never
awaits it: the SyncGroup answer (our partitions) is never applied, heartbeats stay disabled, the
broker expires the member after the session timeout, and nobody consumes. It depends on timing
(about one restart in a dozen on the local stack), and is certain when the process is busy right
after the poll that started the rejoin (tests/faults/test_membership.py). Warming the metadata
before ``subscribe`` makes it worse: the first assignment then succeeds on metadata the leader
recorded under an empty subscription, so a metadata-change rejoin follows every start.

The consumer cannot tell this from a legitimately idle member (a group with more members than
partitions), so the loop asks the broker, and only once it held no partition for a while:
:func:`stuck` compares the broker's view of the group (:class:`GroupView`) with this member's.
:class:`Watchdog` decides when to ask and when to give up on the Kafka consumer (the loop then
closes it and makes a new one), backing off so that it never recreates in a tight loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["GroupView", "Watchdog", "stuck"]

# Group states in which an assignment is settled; in the others a rebalance is under way.
_SETTLED = frozenset({"Stable", "Empty"})


@dataclass(frozen=True)
class GroupView:
    """The broker's view of a consumer group, for one topic."""

    state: str  # the group's state: "Stable", "Empty", "PreparingRebalance", ...
    # The topic's partitions each member owns, by the member's client id.
    owners: Mapping[str, frozenset[int]]
    partitions: frozenset[int]  # the topic's partitions


def stuck(view: GroupView, client_id: str) -> str | None:
    """Why the member ``client_id``, which holds no partition, is out of step with its group;
    None if it is not (it is a legitimately idle member, or a rebalance is under way)."""
    if view.state not in _SETTLED:
        return None
    mine = view.owners.get(client_id)
    if mine is None:
        return f"not a member of its group (group {view.state})"
    if mine:
        return f"the group assigned it partitions {sorted(mine)} it does not hold"
    owned = frozenset().union(*view.owners.values())
    unowned = view.partitions - owned
    if unowned:
        return f"partitions {sorted(unowned)} have no owner in the group"
    return None


class Watchdog:
    """When to ask the broker about a member that holds no partition, and when to recreate its
    Kafka consumer. Fed by the loop with a monotonic clock:

    - :meth:`due` every turn, with whether the member holds partitions: True once it held none
      for ``unassigned_s`` and a probe is due (every ``probe_every_s``);
    - :meth:`observe` with the probe's verdict (a reason from :func:`stuck`, or None): True when
      the consumer should be recreated, after ``confirmations`` verdicts in a row (an
      assignment the broker just settled reaches the member a moment later).

    After a recreation the member must again hold nothing for the bound, which doubles each time
    (up to ``max_unassigned_s``) until it holds partitions again."""

    def __init__(
        self,
        unassigned_s: float,
        *,
        probe_every_s: float = 5.0,
        max_unassigned_s: float = 300.0,
        confirmations: int = 2,
    ) -> None:
        self._initial = unassigned_s
        self._bound = unassigned_s
        self._max = max(max_unassigned_s, unassigned_s)
        self._every = probe_every_s
        self._confirmations = confirmations
        self._since: float | None = None
        self._next_probe = 0.0
        self._strikes = 0

    def due(self, now: float, holding: bool) -> bool:
        if holding:
            self._since = None
            self._bound = self._initial
            self._strikes = 0
            return False
        if self._since is None:
            self._since = now
            return False
        return now - self._since >= self._bound and now >= self._next_probe

    def unassigned_for(self, now: float) -> float:
        return 0.0 if self._since is None else now - self._since

    def observe(self, now: float, reason: str | None) -> bool:
        self._next_probe = now + self._every
        self._strikes = self._strikes + 1 if reason is not None else 0
        if self._strikes < self._confirmations:
            return False
        self._strikes = 0
        self._since = now
        self._bound = min(self._bound * 2, self._max)
        return True
