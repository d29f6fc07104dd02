"""Finding the items at fault in a refused write, alone: integers stand for events, a set of
them for the data Neo4j refuses (one transaction: a refused write stores nothing)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest

from ingest_service.bisection import isolate
from ingest_service.store import RecordRejected


class Store:
    def __init__(self, poison: set[int]) -> None:
        self.poison = poison
        self.attempts: list[list[int]] = []
        self.stored: list[int] = []  # items of the writes that succeeded, in order
        self.rejected: list[tuple[int, str]] = []

    def write(self, items: Sequence[int]) -> None:
        self.attempts.append(list(items))
        bad = sorted(self.poison.intersection(items))
        if bad:
            raise RecordRejected("neo4j:Fake", f"refused {bad[0]}")
        self.stored.extend(items)

    def reject(self, item: int, error: RecordRejected) -> None:
        self.rejected.append((item, error.detail))


def run(items: list[int], poison: set[int]) -> Store:
    store = Store(poison)
    with pytest.raises(RecordRejected) as refused:
        store.write(items)
    store.attempts.clear()
    isolate(items, refused.value, store.write, store.reject)
    return store


@pytest.mark.parametrize("seed", range(40))
def test_each_item_at_fault_is_rejected_in_order_and_every_other_is_stored_once(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 200)
    items = list(range(n))
    poison = set(rng.sample(items, rng.randint(1, min(n, 6))))
    store = run(items, poison)

    # Each with the error of its own write, in the order of the items.
    assert store.rejected == [(i, f"refused {i}") for i in sorted(poison)]
    assert sorted(store.stored) == sorted(set(items) - poison)
    assert len(store.stored) == len(set(store.stored))
    assert store.stored == sorted(store.stored)  # written in order
    k = len(poison)
    assert len(store.attempts) <= 2 * k * max(1, math.ceil(math.log2(n))) + 1


def test_a_single_refused_item_is_rejected_without_another_write() -> None:
    store = run([7], {7})
    assert store.attempts == []
    assert store.rejected == [(7, "refused 7")]


def test_few_faults_among_many_take_far_fewer_writes_than_items() -> None:
    store = run(list(range(1024)), {3, 700})
    assert len(store.attempts) <= 2 * 2 * 10
    assert len(store.stored) == 1022


def test_any_other_error_ends_the_search_and_propagates() -> None:
    store = Store({1, 6})
    calls = {"n": 0}

    def write(items: Sequence[int]) -> None:
        calls["n"] += 1
        if calls["n"] == 4:
            raise TimeoutError("the loop gave up on this write")
        store.write(items)

    with pytest.raises(TimeoutError):
        isolate(list(range(8)), RecordRejected("neo4j:Fake", "refused 1"), write, store.reject)
    assert calls["n"] == 4
    # [0..3] refused, [0,1] refused, [0] stored, then the 4th write ([1]) raised.
    assert store.stored == [0]
    assert store.rejected == []
