"""Wire limits (sparkprov.limits): the encoders refuse an oversized value, naming the field and
the limit, before anything is sent; the decoder refuses an event built without them with reason
``limit:<field>``, and the consume loop dead-letters it and goes on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sparkprov import events, limits
from sparkprov.derived import MemberColumns
from sparkprov.events import MalformedEvent, NodeColumns
from sparkprov.limits import LimitExceeded
from sparkprov.v1 import lineage_pb2

from .test_consumer import batch, make, tp

BIG = "x" * 20_000  # what made Neo4j refuse to index a run id or a relation


def _raw_batch(run_id: str = "run", **block: object) -> bytes:
    """A batch as a hostile or buggy producer could send it: no encoder checks."""
    node_block = lineage_pb2.NodeBlock(op=lineage_pb2.OP_TOKEN, ids=[1, 2], **block)  # type: ignore[arg-type]
    event = lineage_pb2.LineageEvent(
        schema_version=events.SCHEMA_VERSION,
        run_id=run_id,
        workflow="wf",
        batch=lineage_pb2.LineageBatch(tap="tap", nodes=[node_block]),
    )
    return event.SerializeToString()


@pytest.mark.parametrize(
    ("call", "field", "limit"),
    [
        (lambda: events.encode_run_started(BIG, "wf", 0, ""), "run_id", limits.MAX_NAME_BYTES),
        (lambda: events.encode_run_complete("r", BIG, 0, 0), "workflow", limits.MAX_NAME_BYTES),
        (
            lambda: events.encode_batch(
                "r", "wf", "t", 0, 0, [NodeColumns("TOKEN", [1], relation=BIG)], None
            ),
            "relation",
            limits.MAX_NAME_BYTES,
        ),
        (
            lambda: events.encode_batch(
                "r",
                "wf",
                "t",
                0,
                0,
                [NodeColumns("TOKEN", [1], attributes={"a": ["y" * 70_000]})],
                None,
            ),
            "attribute_values",
            limits.MAX_TEXT_BYTES,
        ),
        (
            lambda: events.encode_batch(
                "r",
                "wf",
                "t",
                0,
                0,
                [NodeColumns("TOKEN", range(limits.MAX_IDS_PER_BLOCK + 1))],
                None,
            ),
            "ids_per_block",
            limits.MAX_IDS_PER_BLOCK,
        ),
    ],
)
def test_the_encoders_refuse_oversized_values_naming_field_and_limit(
    call: object, field: str, limit: int
) -> None:
    with pytest.raises(LimitExceeded) as caught:
        call()  # type: ignore[operator]
    assert isinstance(caught.value, ValueError)
    assert (caught.value.field, caught.value.limit) == (field, limit)
    assert field in str(caught.value) and str(limit) in str(caught.value)


def test_limits_count_utf8_bytes() -> None:
    limits.check_name("relation", "é" * (limits.MAX_NAME_BYTES // 2))  # exactly the limit
    with pytest.raises(LimitExceeded):
        limits.check_name("relation", "é" * (limits.MAX_NAME_BYTES // 2 + 1))  # 257 characters


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_raw_batch(run_id=BIG), "limit:run_id"),
        (_raw_batch(relation=BIG), "limit:relation"),
        (_raw_batch(labels=["a", "b" * 70_000]), "limit:labels"),
        (_raw_batch(split=["main", BIG]), "limit:split"),
        (
            _raw_batch(
                attribute_names=[BIG],
                attribute_values=[lineage_pb2.StringColumn(values=["1", "2"])],
            ),
            "limit:attribute_names",
        ),
    ],
)
def test_the_decoder_refuses_oversized_values(data: bytes, reason: str) -> None:
    with pytest.raises(MalformedEvent) as caught:
        events.decode(data)
    assert caught.value.reason == reason
    assert len(caught.value.detail) < 200  # the detail never echoes the value


def test_an_oversized_event_is_dead_lettered_and_consumption_goes_on() -> None:
    messages = [batch(0, 10), _raw_batch(run_id=BIG), _raw_batch(relation=BIG), batch(10, 10)]
    loop = make({0: messages})
    loop.consumer.run()

    assert loop.dlq.reasons == {1: "limit:run_id", 2: "limit:relation"}
    assert loop.store.written == set(range(20))
    assert loop.kafka.committed == {tp(0): 4}


def test_quote_shows_a_short_prefix() -> None:
    assert limits.quote("abc") == "'abc'"
    quoted = limits.quote("z" * 1_000_000)
    assert quoted.startswith("'" + "z" * limits.QUOTE_CHARS + "'...")
    assert len(quoted) < 100


TRUNCATION_CASES = (
    Path(__file__).parents[2] / "capture_jar/src/test/resources/truncation-cases.json"
)


def test_truncate_gives_the_cases_the_jvm_taps_give_too() -> None:
    # The same file is read by TextsTest.java: both writers cut and mark alike.
    cases = json.loads(TRUNCATION_CASES.read_text(encoding="utf-8"))["cases"]
    assert len(cases) >= 5
    for case in cases:
        kept = limits.truncate(case["value"], case["limit"])
        assert kept == case["expected"], case["name"]
        assert len(kept.encode("utf-8")) <= case["limit"], case["name"]


def test_a_large_value_is_cut_to_the_limit_and_says_its_size() -> None:
    kept = limits.truncate("v" * 100_000)
    assert len(kept.encode("utf-8")) == limits.MAX_TEXT_BYTES
    assert kept.endswith("…[truncated: 100000 bytes]")
    assert kept.startswith("v" * 1000)


def test_truncate_values_cuts_data_texts_and_keeps_blocks_that_fit() -> None:
    fits = NodeColumns("TOKEN", [1, 2], labels=["R#0.0", "R#0.1"], attributes={"a": ["x", None]})
    big = NodeColumns(
        "VALUE", [3], labels=["y" * 70_000], values=["y" * 70_000], attributes={"a": ["z" * 70_000]}
    )
    members = MemberColumns(
        "g#1", np.array([1], dtype=np.int64), np.array([9], dtype=np.int64), values=[["w" * 70_000]]
    )
    nodes, (member,) = events.truncate_values([fits, big], [members])
    assert nodes[0] is fits
    cut = nodes[1]
    for text in (cut.labels[0], cut.values[0], cut.attributes["a"][0], member.values[0][0]):
        assert text is not None
        assert len(text.encode("utf-8")) == limits.MAX_TEXT_BYTES
        assert text.endswith("…[truncated: 70000 bytes]")
    # Encoding now succeeds where the whole value would have been refused.
    events.encode_batch("r", "w", "t", 0, 0, nodes, None, members=[member])
    with pytest.raises(LimitExceeded):
        events.encode_batch("r", "w", "t", 0, 0, [big], None)
