"""The consume loop on fakes (Kafka consumer, DLQ producer, store, clock): offsets committed only
after the store and the dead-letter topic have what they cover, nothing skipped across
rebalances, outages and dead-letter failures, and polls frequent enough to keep the group
membership under any backlog.

A poison record (Neo4j refuses its data, which no retry fixes) is found by writing the flush in
halves and goes to the dead-letter topic with the reason while the rest is written and the
offsets advance; a node re-sent with other content is reported the same way.

The fakes check the loop's manners on every call: no store write, DLQ flush, commit or poll
from inside the rebalance listener (kafka-python 3 runs it on its IO loop), no commit for a
partition this member does not own, and no commit that goes backwards."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from kafka import TopicPartition
from kafka.errors import KafkaTimeoutError

from ingest_service.consumer import Consumer
from ingest_service.membership import GroupView
from ingest_service.metrics import Metrics
from ingest_service.settings import IngestSettings
from ingest_service.store import Flush, FlushResult, RecordRejected, StoreUnavailable
from sparkprov.events import EdgeColumns, NodeColumns, encode_batch
from tests.unit.fakes import Rec

TOPIC = "lineage"
GARBAGE = b"\x00 not a lineage event"


def tp(partition: int) -> TopicPartition:
    return TopicPartition(TOPIC, partition)


def batch(first_id: int, nodes: int, edges: int = 0, label: str = "") -> bytes:
    ids = list(range(first_id, first_id + nodes))
    cut = EdgeColumns([ids[0]] * edges, [ids[i % nodes] for i in range(edges)]) if edges else None
    block = NodeColumns("TOKEN", ids, label=label)
    return encode_batch("run", "wf", "tap", 0, first_id, [block], cut)


def ids_of(messages: list[bytes], first_id: int, nodes: int) -> list[int]:
    return [first_id + i * nodes + k for i in range(len(messages)) for k in range(nodes)]


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeKafka:
    """A group member's view of the topic: assignment, positions, pauses, commits."""

    def __init__(self, clock: Clock, logs: dict[int, list[bytes]], max_records: int) -> None:
        self.clock = clock
        self.logs = {tp(p): messages for p, messages in logs.items()}
        self.max_records = max_records
        self.assigned: set[TopicPartition] = set()
        self.paused_: set[TopicPartition] = set()
        self.positions: dict[TopicPartition, int] = {}
        self.committed: dict[TopicPartition, int] = {}
        self.commits: list[dict[TopicPartition, int]] = []
        self.seeks: list[tuple[TopicPartition, int, bool]] = []  # (tp, offset, in listener)
        self.poll_times: list[float] = []
        self.next_assignment: set[TopicPartition] | None = set(self.logs)
        self.in_listener = False
        self.listener: Any = None
        self.closed = False
        self.made_at = clock.now  # when the consumer's factory made it (make_member)
        self.on_poll: Callable[[], None] = lambda: None
        self.stop: Callable[[], None] = lambda: None

    def rebalance(self, partitions: list[int]) -> None:
        """At the next poll: revoke everything, then assign ``partitions`` (a partition that
        stays keeps its fetch position, as kafka-python may; others start at the commit)."""
        self.next_assignment = {tp(p) for p in partitions}

    def done(self) -> bool:
        return self.next_assignment is None and all(
            self.committed.get(t, 0) == len(log) for t, log in self.logs.items()
        )

    # -- the Source protocol --

    def subscribe(self, topics: list[str], listener: Any) -> None:
        assert list(topics) == [TOPIC]
        self.listener = listener

    def poll(self, timeout_ms: int) -> dict[TopicPartition, list[Rec]]:
        assert not self.in_listener
        self.poll_times.append(self.clock.now)
        self.on_poll()
        if self.done() or len(self.poll_times) > 50_000:
            self.stop()
        if self.next_assignment is not None:
            new, self.next_assignment = self.next_assignment, None
            self.in_listener = True
            try:
                if self.assigned:
                    self.listener.on_partitions_revoked(set(self.assigned))
                for t in new - self.assigned:
                    self.positions[t] = self.committed.get(t, 0)
                self.assigned = new
                self.paused_ = set()  # a new assignment starts unpaused
                self.listener.on_partitions_assigned(set(new))
            finally:
                self.in_listener = False
        out: dict[TopicPartition, list[Rec]] = {}
        budget = self.max_records
        for t in sorted(self.assigned - self.paused_):
            start = self.positions[t]
            messages = self.logs[t][start : start + budget]
            if messages:
                out[t] = [
                    Rec(t.topic, t.partition, start + i, None, m) for i, m in enumerate(messages)
                ]
                self.positions[t] += len(messages)
                budget -= len(messages)
        if not out:
            self.clock.now += timeout_ms / 1000
        return out

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    def pause(self, *partitions: TopicPartition) -> None:
        assert set(partitions) <= self.assigned
        self.paused_ |= set(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self.paused_ -= set(partitions)

    def paused(self) -> set[TopicPartition]:
        return set(self.paused_)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        assert partition in self.assigned, "seek on a partition not assigned"
        self.positions[partition] = offset
        self.seeks.append((partition, offset, self.in_listener))

    def position(self, partition: TopicPartition) -> int:
        return self.positions[partition]

    def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {t: len(self.logs[t]) for t in partitions}

    def commit(self, offsets: dict[TopicPartition, Any]) -> None:
        assert not self.in_listener, "commit inside the rebalance listener"
        plain = {t: meta.offset for t, meta in offsets.items()}
        for t, offset in plain.items():
            assert t in self.assigned, f"commit for {t}, not assigned"
            assert offset >= self.committed.get(t, 0), "commit went backwards"
        self.committed.update(plain)
        self.commits.append(plain)

    def close(self, autocommit: bool) -> None:
        assert autocommit is False
        self.closed = True


POISON = RecordRejected(
    "neo4j:Neo.ClientError.Procedure.ProcedureCallFailed", "Property value is too large to index"
)


class FakeStore:
    """Neo4j: each write takes ``seconds_per_row`` of the clock; raises while ``down``; refuses
    (one transaction: nothing of it stored) any write holding a ``poison`` id, and every write,
    even an empty one, while ``refusing``. Keeps the first label of each id, as the procedure
    does, and reports later versions with another label as conflicts."""

    def __init__(self, clock: Clock, kafka: FakeKafka, seconds_per_row: float = 0.0) -> None:
        self.clock = clock
        self.kafka = kafka
        self.seconds_per_row = seconds_per_row
        self.down = False
        self.refusing = False
        self.poison: set[int] = set()
        self.attempts = 0
        self.writes: list[list[int]] = []  # node ids of each successful write
        self.rows: list[int] = []
        self.labels: dict[int, str] = {}

    def write(self, flush: Flush) -> FlushResult:
        assert not self.kafka.in_listener, "store write inside the rebalance listener"
        self.attempts += 1
        if self.down:
            raise StoreUnavailable("ServiceUnavailable: fake outage")
        if self.refusing:
            raise POISON
        if not flush:
            return FlushResult(0, 0, 0, [])
        ids = [i for block in flush.blocks for i in block["ids"]]
        if self.poison.intersection(ids):
            raise POISON
        self.clock.now += flush.rows * self.seconds_per_row
        self.writes.append(ids)
        self.rows.append(flush.rows)
        conflicts = []
        for position, block in enumerate(flush.blocks):
            for i in block["ids"]:
                if self.labels.setdefault(i, block["label"]) != block["label"]:
                    conflicts.append((position, i))
        edges = sum(len(e["src"]) for e in flush.edges)
        return FlushResult(len(ids), edges, 0, [], conflicts=conflicts)

    @property
    def written(self) -> set[int]:
        return {i for ids in self.writes for i in ids}


class Sent:
    def __init__(self) -> None:
        self.done = False
        self.ok = False

    def succeeded(self) -> bool:
        return self.done and self.ok


class FakeDeadLetters:
    """Dead-letter producer: a flush completes every send, acknowledged unless ``failing``."""

    def __init__(self, kafka: FakeKafka) -> None:
        self.kafka = kafka
        self.failing = False
        self.refuse_sends = 0  # this many next sends raise at once
        self.sent: list[tuple[int, Sent]] = []  # (source offset, delivery)
        self.reasons: dict[int, str] = {}  # source offset -> reason header
        self._unfinished: list[Sent] = []

    def send(
        self, topic: str, *, value: bytes | None, key: bytes | None, headers: list[Any]
    ) -> Sent:
        assert not self.kafka.in_listener
        if self.refuse_sends:
            self.refuse_sends -= 1
            raise KafkaTimeoutError("fake: metadata not available")
        source = dict(headers)["source"].decode().rsplit("/", 1)[1]
        self.reasons[int(source)] = dict(headers)["reason"].decode()
        delivery = Sent()
        self.sent.append((int(source), delivery))
        self._unfinished.append(delivery)
        return delivery

    def flush(self, timeout: float) -> None:
        assert not self.kafka.in_listener, "DLQ flush inside the rebalance listener"
        for delivery in self._unfinished:
            delivery.done, delivery.ok = True, not self.failing
        self._unfinished.clear()

    def close(self, timeout: float) -> None:
        pass

    def acknowledged(self, offset: int) -> bool:
        return any(o == offset and d.succeeded() for o, d in self.sent)


@dataclass
class Loop:
    consumer: Consumer
    kafka: FakeKafka
    store: FakeStore
    dlq: FakeDeadLetters
    clock: Clock
    metrics: Metrics = field(default_factory=Metrics)


def make(
    logs: dict[int, list[bytes]],
    *,
    batch_rows: int = 1000,
    max_poll_interval_ms: int = 300_000,
    seconds_per_row: float = 0.0,
    max_records: int = 500,
) -> Loop:
    clock = Clock()
    kafka = FakeKafka(clock, logs, max_records)
    store = FakeStore(clock, kafka, seconds_per_row)
    dlq = FakeDeadLetters(kafka)
    settings = IngestSettings(
        topic=TOPIC,
        batch_rows=batch_rows,
        batch_ms=250,
        max_poll_records=max_records,
        max_poll_interval_ms=max_poll_interval_ms,
    )
    metrics = Metrics()
    consumer = Consumer(
        settings,
        store,
        metrics,
        source=lambda s: kafka,
        dead_letters=lambda s: dlq,
        clock=clock,
        sleep=clock.sleep,
    )
    kafka.stop = consumer.stop
    return Loop(consumer, kafka, store, dlq, clock, metrics)


def test_a_backlog_is_written_between_polls_that_keep_the_membership() -> None:
    # 400 messages of 5,000 rows and one of 75,000 (edges, cut by Flush.split): one poll returns
    # them all: 2,075,000 rows, 2,075 s of writing at 1 ms a row, 34 times max_poll_interval.
    messages = [batch(i * 5000, 5000) for i in range(400)]
    messages.insert(200, batch(10**9, 5000, edges=70_000))
    loop = make({0: messages}, batch_rows=20_000, max_poll_interval_ms=60_000, seconds_per_row=1e-3)
    loop.consumer.run()

    assert len(loop.kafka.poll_times) > 100
    gaps = [b - a for a, b in zip(loop.kafka.poll_times, loop.kafka.poll_times[1:], strict=False)]
    assert max(gaps) <= 21.0  # one write of at most batch_rows, far below the 60 s interval
    assert loop.clock.now - 1000.0 > 34 * 60
    assert max(loop.store.rows) <= 20_000
    assert loop.kafka.committed == {tp(0): 401}
    assert loop.store.written == set(range(400 * 5000)) | set(range(10**9, 10**9 + 5000))
    assert loop.kafka.closed


def test_a_revoked_partition_drops_the_buffer_uncommitted_and_is_rewound_when_it_returns() -> None:
    logs = {
        0: [batch(i * 100, 100) for i in range(30)],
        1: [batch(10**6 + i * 100, 100) for i in range(30)],
    }
    loop = make(logs, batch_rows=10**6)  # everything stays buffered until batch_ms
    kafka = loop.kafka
    state = {"polls": 0, "back": False}

    def on_poll() -> None:
        state["polls"] += 1
        if state["polls"] == 2:
            # Both partitions' 60 records are buffered, none written or committed yet.
            assert loop.store.writes == [] and kafka.commits == []
            kafka.rebalance([0])
        elif kafka.commits and not state["back"]:
            state["back"] = True
            kafka.rebalance([0, 1])

    kafka.on_poll = on_poll
    loop.consumer.run()

    # Partition 0 stayed: the listener sought it back to the first dropped offset.
    assert (tp(0), 0, True) in kafka.seeks
    # The first write holds partition 0 only, from offset 0: partition 1's records were dropped,
    # nothing of them committed while it was away (FakeKafka refuses such a commit).
    assert loop.store.writes[0] == ids_of(logs[0], 0, 100)
    assert tp(1) not in kafka.commits[0]
    assert kafka.committed == {tp(0): 30, tp(1): 30}
    assert loop.store.written == set(ids_of(logs[0], 0, 100)) | set(ids_of(logs[1], 10**6, 100))


def test_while_neo4j_is_down_nothing_is_committed_and_nothing_is_skipped() -> None:
    messages = [batch(i * 100, 100) for i in range(20)]
    loop = make({0: messages}, batch_rows=1000)
    kafka, store = loop.kafka, loop.store
    store.down = True
    polls_while_down = []

    def on_poll() -> None:
        if store.down:
            polls_while_down.append(kafka.paused() == kafka.assignment())
            assert kafka.commits == []
        if store.attempts >= 5:
            store.down = False

    kafka.on_poll = on_poll
    loop.consumer.run()

    assert loop.metrics.store_failures == 5
    # It stayed in the group (polled between retries) with every partition paused.
    assert polls_while_down.count(True) >= 5
    assert loop.clock.now - 1000.0 >= 0.5 + 1 + 2 + 4 + 8  # backed off, doubling
    assert store.writes[0] == ids_of(messages[:10], 0, 100)
    assert store.written == set(range(2000))
    assert kafka.committed == {tp(0): 20}


def test_a_rebalance_during_an_outage_rewinds_the_dropped_buffer() -> None:
    messages = [batch(i * 100, 100) for i in range(20)]
    loop = make({0: messages}, batch_rows=1000)
    kafka, store = loop.kafka, loop.store
    store.down = True
    state = {"rebalanced": False}

    def on_poll() -> None:
        if store.attempts == 2 and not state["rebalanced"]:
            state["rebalanced"] = True
            kafka.rebalance([0])  # during a back-off's paused poll
        if store.attempts >= 4:
            store.down = False

    kafka.on_poll = on_poll
    loop.consumer.run()

    assert (tp(0), 0, True) in kafka.seeks
    assert store.writes[0] == ids_of(messages[:10], 0, 100)
    assert store.written == set(range(2000))
    assert kafka.committed == {tp(0): 20}


def test_a_rebalance_between_two_writes_of_a_flush_ends_it_uncommitted() -> None:
    # Three messages of 100 rows fill a buffer of 250: it is written in two parts, with a
    # paused poll between them; the rebalance inside that poll drops the buffer.
    messages = [batch(i * 100, 100) for i in range(6)]
    loop = make({0: messages}, batch_rows=250)
    kafka, store = loop.kafka, loop.store
    state = {"rebalanced": False}

    def on_poll() -> None:
        if len(store.writes) == 1 and not state["rebalanced"]:
            state["rebalanced"] = True
            kafka.rebalance([0])

    kafka.on_poll = on_poll
    loop.consumer.run()

    assert (tp(0), 0, True) in kafka.seeks
    # The second part (message 2) is not written: the flush ended, and the partition was read
    # again from offset 0.
    assert store.writes[0] == ids_of(messages[:2], 0, 100)
    assert store.writes[1] == ids_of(messages[:2], 0, 100)
    assert loop.metrics.flushes == len(kafka.commits)
    assert kafka.committed == {tp(0): 6}
    assert store.written == set(range(600))


def test_stopping_while_neo4j_is_down_commits_nothing() -> None:
    loop = make({0: [batch(i * 100, 100) for i in range(20)]}, batch_rows=1000)
    loop.store.down = True

    def on_poll() -> None:
        if loop.store.attempts >= 3:
            loop.consumer.stop()

    loop.kafka.on_poll = on_poll
    loop.consumer.run()  # returns: the unwritten events are left for redelivery

    assert loop.kafka.commits == []
    assert loop.kafka.closed


@pytest.mark.parametrize("failure", ["unacknowledged", "send_raises"])
def test_no_commit_passes_a_dead_letter_until_it_is_acknowledged(failure: str) -> None:
    messages = [batch(0, 100), batch(100, 100), GARBAGE, batch(200, 100), batch(300, 100)]
    loop = make({0: messages})
    kafka, dlq = loop.kafka, loop.dlq
    if failure == "unacknowledged":
        dlq.failing = True
    else:
        dlq.refuse_sends = 1

    def on_poll() -> None:
        for offset in kafka.committed.values():
            assert offset <= 2 or dlq.acknowledged(2)
        if loop.metrics.dead_letter_failures:
            dlq.failing = False

    kafka.on_poll = on_poll
    loop.consumer.run()

    # The first commit stops at the dead letter; the partition is read again from there.
    assert kafka.commits[0] == {tp(0): 2}
    assert (tp(0), 2, False) in kafka.seeks
    assert loop.metrics.dead_letter_failures == 1
    assert dlq.acknowledged(2)
    assert kafka.committed == {tp(0): 5}
    assert loop.store.written == set(range(400))


def test_a_poison_event_goes_to_the_dead_letter_topic_and_the_rest_is_written() -> None:
    messages = [batch(i * 100, 100) for i in range(5)]
    loop = make({0: messages})
    loop.store.poison = {250}  # in the third message
    loop.consumer.run()

    assert loop.dlq.reasons == {2: "neo4j:Neo.ClientError.Procedure.ProcedureCallFailed"}
    assert loop.dlq.acknowledged(2)
    assert loop.store.written == set(range(500)) - set(range(200, 300))
    assert loop.kafka.committed == {tp(0): 5}
    assert loop.metrics.store_rejections == 1
    assert loop.metrics.store_failures == 0  # not taken for an outage: no back-off, no retry


def test_poison_events_among_many_are_found_in_few_writes() -> None:
    messages = [batch(i * 100, 100) for i in range(64)]
    loop = make({0: messages, 1: [batch(10**6, 100), batch(10**6 + 100, 100)]}, batch_rows=10**6)
    loop.store.poison = {305, 4799, 10**6 + 150}  # messages 3 and 47 of partition 0, 1 of 1
    loop.consumer.run()

    assert loop.dlq.reasons == dict.fromkeys([3, 47, 1], POISON.reason)
    poisoned = {*range(300, 400), *range(4700, 4800), *range(10**6 + 100, 10**6 + 200)}
    everything = {*range(6400), *range(10**6, 10**6 + 200)}
    assert loop.store.written == everything - poisoned
    assert loop.kafka.committed == {tp(0): 64, tp(1): 2}
    assert loop.metrics.store_rejections == 3
    # Halving: about 2 k log2(n) writes, far fewer than one per event.
    assert loop.store.attempts < 2 * 3 * 7 * 2


def test_a_store_that_refuses_even_an_empty_write_is_retried_not_dead_lettered() -> None:
    messages = [batch(i * 100, 100) for i in range(5)]
    loop = make({0: messages})
    loop.store.refusing = True

    def on_poll() -> None:
        assert loop.kafka.commits == [] or not loop.store.refusing
        if loop.store.attempts >= 6:
            loop.store.refusing = False

    loop.kafka.on_poll = on_poll
    loop.consumer.run()

    assert loop.dlq.sent == []
    assert loop.metrics.store_failures >= 2
    assert loop.store.written == set(range(500))
    assert loop.kafka.committed == {tp(0): 5}


def test_a_node_resent_with_other_content_is_counted_and_its_event_dead_lettered() -> None:
    messages = [
        batch(0, 10, label="a"),
        batch(0, 10, label="a"),  # at-least-once duplicate: silent
        batch(5, 2, label="b"),  # nodes 5 and 6 again, other content: the first version stays
        batch(10, 10, label="a"),
    ]
    loop = make({0: messages})
    loop.consumer.run()

    assert loop.dlq.reasons == {2: "conflict"}
    assert loop.metrics.conflicts == 2
    assert loop.store.labels[5] == "a"
    assert loop.store.written == set(range(20))
    assert loop.kafka.committed == {tp(0): 4}


def test_a_commit_that_fails_because_kafka_is_away_does_not_stop_the_consumer() -> None:
    """Seen in the fault suite: Kafka restarted while a commit ran; kafka-python raised a
    connection error from commit() and the ingest process died. The data is in Neo4j: the
    consumer goes on, and a later commit covers the offsets."""
    from kafka.errors import KafkaConnectionError

    logs = {0: [batch(i * 100, 100) for i in range(20)]}
    loop = make(logs, batch_rows=500)
    kafka = loop.kafka
    real_commit = kafka.commit
    failures = {"left": 2}

    def flaky_commit(offsets: dict[TopicPartition, Any]) -> None:
        if failures["left"]:
            failures["left"] -= 1
            raise KafkaConnectionError("111 ECONNREFUSED")
        real_commit(offsets)

    kafka.commit = flaky_commit  # type: ignore[method-assign]
    loop.consumer.run()
    assert failures["left"] == 0
    assert kafka.committed == {tp(0): 20}
    assert loop.store.written == set(range(20 * 100))


# -- membership: a member the group silently left without partitions ----------------------


class FakeProbe:
    """The broker's view of the group: ``view(client_id)`` gives it; raises while ``down``."""

    def __init__(self, view: Callable[[str], GroupView]) -> None:
        self.view = view
        self.down = False
        self.calls: list[float] = []
        self.closed = False
        self.clock: Clock | None = None

    def describe(self, group_id: str, topic: str) -> GroupView:
        assert topic == TOPIC
        self.calls.append(self.clock.now if self.clock else 0.0)
        if self.down:
            raise KafkaTimeoutError("fake: no coordinator")
        return self.view(group_id)

    def close(self) -> None:
        self.closed = True


def make_member(
    logs: dict[int, list[bytes]], consumers: list[FakeKafka], probe: FakeProbe, clock: Clock
) -> tuple[Consumer, IngestSettings, list[FakeKafka]]:
    """A consumer whose Kafka consumers come from ``consumers`` in turn (each wired to stop the
    loop when done), with ``probe`` as the broker's view."""
    settings = IngestSettings(topic=TOPIC, batch_rows=1000, batch_ms=250, unassigned_s=15.0)
    made: list[FakeKafka] = []
    probe.clock = clock

    def source(s: IngestSettings) -> FakeKafka:
        kafka = consumers.pop(0)
        kafka.stop = lambda: consumer.stop()
        kafka.made_at = clock.now
        made.append(kafka)
        return kafka

    consumer = Consumer(
        settings,
        FakeStore(clock, consumers[0]),
        Metrics(),
        source=source,
        dead_letters=lambda s: FakeDeadLetters(made[0]),
        group=lambda s: probe,
        clock=clock,
        sleep=clock.sleep,
    )
    return consumer, settings, made


def test_a_member_the_group_left_without_its_partitions_gets_a_new_kafka_consumer() -> None:
    """Seen after a restart: kafka-python applied no assignment (the group leader's rejoin task
    was orphaned, see ingest_service.membership) and the process sat alive without partitions
    while its lineage waited. The broker says the member owns the partition it does not hold:
    the loop recreates its Kafka consumer, which gets the partition, and everything is stored."""
    logs = {0: [batch(i * 100, 100) for i in range(10)]}
    clock = Clock()
    left_out = FakeKafka(clock, logs, 500)
    left_out.next_assignment = None  # the assignment never reaches the member
    healthy = FakeKafka(clock, logs, 500)
    me = {"client_id": ""}
    probe = FakeProbe(lambda g: GroupView("Stable", {me["client_id"]: frozenset({0})}, {0}))
    consumer, settings, made = make_member(logs, [left_out, healthy], probe, clock)
    me["client_id"] = settings.client_id

    consumer.run()

    assert made == [left_out, healthy]
    assert left_out.closed and healthy.closed
    assert healthy.committed == {tp(0): 10}
    assert consumer.metrics.consumer_recreations == 1
    # Not before the bound, and only after a second look (an assignment just settled by the
    # broker reaches the member a moment later).
    assert len(probe.calls) == 2
    assert probe.calls[0] - 1000.0 >= settings.unassigned_s
    assert probe.closed


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda me: GroupView("Empty", {}, frozenset({0, 1})), id="not-a-member"),
        pytest.param(
            lambda me: GroupView("Stable", {me: frozenset(), "other": frozenset({0})}, {0, 1}),
            id="partition-without-owner",
        ),
    ],
)
def test_a_member_left_out_of_a_group_that_consumes_nothing_is_recreated(
    view: Callable[[str], GroupView],
) -> None:
    logs = {0: [batch(i * 100, 100) for i in range(3)], 1: [batch(10**6, 100)]}
    clock = Clock()
    left_out = FakeKafka(clock, logs, 500)
    left_out.next_assignment = None
    healthy = FakeKafka(clock, logs, 500)
    me = {"client_id": ""}
    probe = FakeProbe(lambda g: view(me["client_id"]))
    consumer, settings, made = make_member(logs, [left_out, healthy], probe, clock)
    me["client_id"] = settings.client_id
    consumer.run()
    assert consumer.metrics.consumer_recreations == 1
    assert healthy.committed == {tp(0): 3, tp(1): 1}


def test_an_idle_member_of_a_group_with_more_members_than_partitions_is_left_alone() -> None:
    """Another member owns the only partition: this one holds nothing, legitimately. It looks
    now and then, never recreates its consumer and never floods the broker with questions."""
    logs = {0: [batch(0, 100)]}
    clock = Clock()
    idle = FakeKafka(clock, logs, 500)
    idle.next_assignment = None
    me = {"client_id": ""}
    probe = FakeProbe(
        lambda g: GroupView("Stable", {me["client_id"]: frozenset(), "other": frozenset({0})}, {0})
    )
    consumer, settings, made = make_member(logs, [idle], probe, clock)
    me["client_id"] = settings.client_id
    consumer.run()  # until the fake's poll limit: 50,000 empty polls of 0.1 s
    hours = (clock.now - 1000.0) / 3600
    assert hours > 1
    assert consumer.metrics.consumer_recreations == 0
    assert made == [idle]
    assert 0 < len(probe.calls) <= hours * 3600 / 5 + 1  # one look per 5 s at most


def test_while_kafka_does_not_answer_the_member_keeps_its_consumer() -> None:
    logs = {0: [batch(0, 100)]}
    clock = Clock()
    kafka = FakeKafka(clock, logs, 500)
    kafka.next_assignment = None
    probe = FakeProbe(lambda g: GroupView("Empty", {}, frozenset({0})))
    probe.down = True
    consumer, settings, made = make_member(logs, [kafka], probe, clock)
    consumer.run()
    assert consumer.metrics.consumer_recreations == 0
    assert len(probe.calls) > 10


def test_a_member_left_out_again_and_again_is_recreated_ever_more_slowly() -> None:
    """If each new consumer is left out too (a broken group), the bound doubles up to 5 min:
    a handful of recreations in hours, not a rebalance storm."""
    logs = {0: [batch(0, 100)]}
    clock = Clock()
    consumers = []
    for _ in range(100):
        k = FakeKafka(clock, logs, 500)
        k.next_assignment = None
        k.on_poll = lambda: consumer.stop() if clock.now > 1000.0 + 3 * 3600 else None
        consumers.append(k)
    probe = FakeProbe(lambda g: GroupView("Empty", {}, frozenset({0})))
    consumer, settings, made = make_member(logs, consumers, probe, clock)
    consumer.run()  # three hours
    times = [k.made_at for k in made[1:]]  # the recreations
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert 4 <= len(times) <= 3 * 3600 / 300 + 5
    assert [round(g) for g in gaps] == sorted(round(g) for g in gaps)  # ever more slowly...
    assert max(gaps) <= 300 + 5 + 1  # ...up to the cap (and one confirming look)
    assert consumer.metrics.consumer_recreations == len(times)
    assert all(k.closed for k in made)


def test_records_held_when_the_kafka_consumer_is_replaced_are_dropped() -> None:
    """Defensive: a member holds nothing when its consumer is recreated, but should the old
    consumer have returned records anyway (here: of a partition the listener never gave), none
    of them is committed through the new one, which does not own that partition."""
    clock = Clock()
    old = FakeKafka(clock, {1: [batch(10**6, 100)]}, 500)
    old.next_assignment = None
    old.assigned, old.positions = {tp(1)}, {tp(1): 0}  # the listener was not told
    healthy = FakeKafka(clock, {0: [batch(i * 100, 100) for i in range(3)]}, 500)
    me = {"client_id": ""}
    probe = FakeProbe(lambda g: GroupView("Stable", {me["client_id"]: frozenset({0})}, {0, 1}))
    probe.clock = clock
    consumers = [old, healthy]
    made: list[FakeKafka] = []

    def source(s: IngestSettings) -> FakeKafka:
        kafka = consumers.pop(0)
        kafka.stop = lambda: consumer.stop()
        made.append(kafka)
        return kafka

    # batch_ms: the old consumer's record is still buffered when the consumer is replaced.
    settings = IngestSettings(topic=TOPIC, batch_ms=60_000, unassigned_s=15.0)
    me["client_id"] = settings.client_id
    consumer = Consumer(
        settings,
        FakeStore(clock, old),
        Metrics(),
        source=source,
        dead_letters=lambda s: FakeDeadLetters(made[0]),
        group=lambda s: probe,
        clock=clock,
        sleep=clock.sleep,
    )
    consumer.run()
    assert made == [old, healthy]
    assert old.commits == []
    assert healthy.committed == {tp(0): 3}  # FakeKafka refuses a commit of tp(1)


class LostRejoinKafka(FakeKafka):
    """kafka-python's lost rejoin: after ``lose_after`` polls the member's partitions are
    revoked for a rejoin whose assignment never arrives; ``assignment()`` keeps listing them
    (pending revocation) while nothing more is fetched."""

    def __init__(self, clock: Clock, logs: dict[int, list[bytes]], lose_after: int) -> None:
        super().__init__(clock, logs, max_records=1)
        self.lose_after = lose_after
        self.lost = False

    def poll(self, timeout_ms: int) -> dict[TopicPartition, list[Rec]]:
        if not self.lost and len(self.poll_times) >= self.lose_after:
            self.lost = True
            self.listener.on_partitions_revoked(set(self.assigned))
        if self.lost:
            self.poll_times.append(self.clock.now)
            if len(self.poll_times) > 50_000:
                self.stop()
            self.clock.now += timeout_ms / 1000
            return {}
        return super().poll(timeout_ms)


def test_a_member_whose_rejoin_was_lost_mid_stream_gets_a_new_kafka_consumer() -> None:
    """The watchdog goes by what the rebalance listener gave and took back, not by the
    consumer's assignment(), which still lists partitions revoked for a rejoin that never
    completes."""
    logs = {0: [batch(i * 100, 100) for i in range(10)]}
    clock = Clock()
    lost = LostRejoinKafka(clock, logs, lose_after=4)
    healthy = FakeKafka(clock, logs, 500)
    me = {"client_id": ""}
    probe = FakeProbe(lambda g: GroupView("Stable", {me["client_id"]: frozenset({0})}, {0}))
    consumer, settings, made = make_member(logs, [lost, healthy], probe, clock)
    me["client_id"] = settings.client_id
    consumer.run()
    assert lost.lost and lost.assignment() == {tp(0)}
    assert consumer.metrics.consumer_recreations == 1
    assert healthy.committed[tp(0)] == 10
