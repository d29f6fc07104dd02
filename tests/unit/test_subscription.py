"""The subscription alone, on fake Kafka consumers and a fake probe: the partitions held follow
the rebalance listener, and a member the group left out gets a new Kafka consumer (the loop's
hook first, then the old consumer closed, the new one subscribed), but not while its consumer
cannot be made, while Kafka does not answer, or while it holds partitions."""

from __future__ import annotations

from typing import Any, NamedTuple

from kafka.errors import KafkaConnectionError, KafkaTimeoutError

from ingest_service.membership import GroupView
from ingest_service.metrics import Metrics
from ingest_service.settings import IngestSettings
from ingest_service.subscription import Subscription

SETTINGS = IngestSettings(topic="lineage", unassigned_s=15.0)  # a probe every 5 s


class TP(NamedTuple):
    topic: str
    partition: int


class Source:
    def __init__(self, name: str, log: list[Any]) -> None:
        self.name = name
        self.log = log
        self.listener: Any = None

    def subscribe(self, topics: list[str], listener: Any) -> None:
        self.log.append(("subscribe", self.name, list(topics)))
        self.listener = listener

    def close(self, autocommit: bool) -> None:
        self.log.append(("close", self.name, autocommit))


class Probe:
    def __init__(self, log: list[Any], view: GroupView | None) -> None:
        self.log = log
        self.view = view  # None: Kafka does not answer

    def describe(self, group_id: str, topic: str) -> GroupView:
        self.log.append(("describe", group_id, topic))
        if self.view is None:
            raise KafkaTimeoutError("fake: no coordinator")
        return self.view

    def close(self) -> None:
        self.log.append(("close probe",))


class Harness:
    def __init__(self, view: GroupView | None) -> None:
        self.log: list[Any] = []
        self.metrics = Metrics()
        self.made = 0
        self.refuse = 0  # this many next factory calls raise
        self.probes = 0
        self.probe = Probe(self.log, view)
        self.subscription = Subscription(
            SETTINGS,
            self.metrics,
            source=self.source,
            group=self.group,
            on_revoked=lambda ps: self.log.append(("revoked", ps)),
            on_assigned=lambda ps: self.log.append(("assigned", ps)),
            on_replaced=lambda: self.log.append(("replaced",)),
        )

    def source(self, settings: IngestSettings) -> Source:
        if self.refuse:
            self.refuse -= 1
            raise KafkaConnectionError("fake: refused")
        self.made += 1
        return Source(f"consumer{self.made}", self.log)

    def group(self, settings: IngestSettings) -> Probe:
        self.probes += 1
        return self.probe

    def watch(self, *times: float) -> None:
        for now in times:
            self.subscription.watch(now)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.log if e[0] == kind]


LEFT_OUT = GroupView("Empty", {}, frozenset({0}))
IDLE = GroupView("Stable", {SETTINGS.client_id: frozenset(), "other": frozenset({0})}, {0})


def test_the_partitions_held_follow_the_listener_not_the_assignment() -> None:
    h = Harness(IDLE)
    assert h.log == [("subscribe", "consumer1", ["lineage"])]
    listener = h.subscription.source.listener  # type: ignore[attr-defined]
    listener.on_partitions_assigned({TP("lineage", 0), TP("lineage", 1)})
    listener.on_partitions_revoked({TP("lineage", 0)})
    assert h.subscription.held == {TP("lineage", 1)}
    assert h.log[1:] == [
        ("assigned", frozenset({TP("lineage", 0), TP("lineage", 1)})),
        ("revoked", frozenset({TP("lineage", 0)})),
    ]
    h.watch(0.0)
    assert h.metrics.assigned_partitions == 1


def test_a_member_left_out_is_recreated_after_the_bound_and_a_second_look() -> None:
    h = Harness(LEFT_OUT)
    first = h.subscription.source
    h.watch(0.0, 14.9)
    assert h.of("describe") == []  # not before the bound
    h.watch(15.0, 19.9)
    assert len(h.of("describe")) == 1 and h.made == 1  # one look is not enough
    h.watch(20.0)
    assert len(h.of("describe")) == 2
    assert h.log[-4:] == [
        ("describe", SETTINGS.group_id, "lineage"),
        ("replaced",),
        ("close", "consumer1", False),
        ("subscribe", "consumer2", ["lineage"]),
    ]
    assert h.subscription.source is not first
    assert h.metrics.consumer_recreations == 1
    # The next recreation waits twice as long.
    h.watch(21.0, 50.9)
    assert h.made == 2
    h.watch(51.0, 56.0)
    assert h.made == 3 and h.probes == 1


def test_when_a_new_consumer_cannot_be_made_the_old_one_stays() -> None:
    h = Harness(LEFT_OUT)
    first = h.subscription.source
    h.refuse = 1
    h.watch(0.0, 15.0, 20.0)
    assert h.subscription.source is first
    assert h.of("close") == [] and h.of("replaced") == []
    assert h.metrics.consumer_recreations == 0


def test_while_kafka_does_not_answer_or_the_member_is_idle_it_keeps_its_consumer() -> None:
    for view in (None, IDLE):
        h = Harness(view)
        h.watch(*range(0, 600))
        assert h.made == 1 and h.metrics.consumer_recreations == 0
        assert 100 < len(h.of("describe")) <= 600 / 5 + 1


def test_a_member_holding_partitions_never_asks() -> None:
    h = Harness(LEFT_OUT)
    h.subscription.source.listener.on_partitions_assigned({TP("lineage", 0)})  # type: ignore[attr-defined]
    h.watch(*range(0, 600))
    assert h.of("describe") == [] and h.probes == 0


def test_close_closes_the_consumer_and_the_probe_if_one_was_made() -> None:
    h = Harness(LEFT_OUT)
    h.subscription.close()
    assert h.log[-1] == ("close", "consumer1", False) and h.probes == 0
    h = Harness(LEFT_OUT)
    h.watch(0.0, 15.0)
    h.subscription.close()
    assert h.log[-2:] == [("close", "consumer1", False), ("close probe",)]
