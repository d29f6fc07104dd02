"""The offset bookkeeping on its own: what may be committed, and where partitions read again."""

from __future__ import annotations

from ingest_service.offsets import Offsets


class Sent:
    def __init__(self, ok: bool) -> None:
        self.ok = ok

    def succeeded(self) -> bool:
        return self.ok


def test_commit_covers_what_was_taken_and_forgets_it() -> None:
    offsets: Offsets[str] = Offsets()
    offsets.received("a", 10, 13)
    for offset in (10, 11, 12):
        offsets.take("a", offset)
    assert offsets.committable() == {"a": 13}
    offsets.committed({"a": 13})
    assert not offsets.taken and not offsets.holding
    assert offsets.committable() == {}


def test_commit_stops_at_the_first_dead_letter_not_acknowledged() -> None:
    offsets: Offsets[str] = Offsets()
    offsets.received("a", 0, 6)
    offsets.received("b", 0, 2)
    offsets.take("a", 0)
    offsets.dead_letter("a", 1, Sent(ok=True))
    offsets.take("a", 2)
    offsets.dead_letter("a", 3, Sent(ok=False))
    offsets.dead_letter("a", 4, Sent(ok=False))
    offsets.take("a", 5)
    offsets.dead_letter("b", 0, Sent(ok=True))
    offsets.take("b", 1)
    committable = offsets.committable()
    assert committable == {"a": 3, "b": 2}
    assert offsets.held_back(committable) == ["a"]
    offsets.committed(committable)
    offsets.drop()
    # Partition a reads again from its undelivered dead letter; b had nothing left.
    assert offsets.rewind("a") == 3
    assert offsets.rewind("b") is None


def test_records_still_waiting_after_a_commit_are_where_a_drop_rewinds() -> None:
    offsets: Offsets[str] = Offsets()
    offsets.received("a", 100, 200)
    offsets.received("b", 7, 9)
    offsets.take("a", 100)
    offsets.take("a", 101)
    offsets.committed(offsets.committable())
    assert offsets.holding  # a's 102..199 and b's 7..8 were received, not committed
    offsets.take("a", 102)
    offsets.drop()
    assert (offsets.rewind("a"), offsets.rewind("b")) == (102, 7)
    assert offsets.rewind("a") is None  # once


def test_rewinds_are_forgotten_when_the_assignment_is_complete() -> None:
    offsets: Offsets[str] = Offsets()
    offsets.received("a", 5, 6)
    offsets.take("a", 5)
    offsets.drop()
    offsets.forget_rewinds()
    assert offsets.rewind("a") is None
