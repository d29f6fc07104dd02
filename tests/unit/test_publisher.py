"""The capture agent's producer cache, with a stand-in for kafka-python's producer."""

from __future__ import annotations

from typing import Any

import pytest

from capture_agent import publisher
from capture_agent.publisher import PublisherConfig, producer_for
from capture_agent.settings import CaptureSettings


class _FakeProducer:
    def __init__(self, **options: Any) -> None:
        self.options = options

    def close(self, timeout: float) -> None:
        pass


def test_a_producer_serves_only_sessions_with_its_own_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session with a 3 s bound, then one with 90 s in the same process (the fault suite does
    this): the second must not reuse the first's producer, whose records expire after 3 s."""
    import kafka

    monkeypatch.setattr(kafka, "KafkaProducer", _FakeProducer)
    monkeypatch.setattr(publisher, "_producers", {})
    short = producer_for(PublisherConfig("127.0.0.1:1", "t", timeout_s=3))
    long = producer_for(PublisherConfig("127.0.0.1:1", "t", timeout_s=90))
    assert short is not long
    assert short.options["delivery_timeout_ms"] < long.options["delivery_timeout_ms"]
    assert producer_for(PublisherConfig("127.0.0.1:1", "t", timeout_s=90)) is long


def test_lineage_travels_zstd_compressed_by_default_in_both_producers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kafka

    from capture_agent.jvm import kafka_settings

    monkeypatch.setattr(kafka, "KafkaProducer", _FakeProducer)
    monkeypatch.setattr(publisher, "_producers", {})
    config = PublisherConfig("127.0.0.1:1", "t")
    assert config.compression == "zstd"
    assert producer_for(config).options["compression_type"] == "zstd"
    assert kafka_settings(config)["compression.type"] == "zstd"
    assert kafka_settings(config)["compression.zstd.level"] == "1"
    off = PublisherConfig("127.0.0.1:1", "t", compression="none")
    assert producer_for(off).options["compression_type"] is None
    assert kafka_settings(off)["compression.type"] == "none"
    assert "compression.zstd.level" not in kafka_settings(off)


def test_the_compression_comes_from_the_environment_and_a_wrong_one_is_refused() -> None:
    assert CaptureSettings.from_env({}).kafka_compression == "zstd"
    gzip = CaptureSettings.from_env({"SPARKPROV_KAFKA_COMPRESSION": " GZIP "})
    assert gzip.kafka_compression == "gzip"
    with pytest.raises(ValueError, match="SPARKPROV_KAFKA_COMPRESSION"):
        CaptureSettings.from_env({"SPARKPROV_KAFKA_COMPRESSION": "brotli"})
    with pytest.raises(ValueError, match="SPARKPROV_KAFKA_COMPRESSION"):
        PublisherConfig("b", "t", compression="brotli")
