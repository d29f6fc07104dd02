"""Kafka TLS and SASL: one environment gives the capture agent's producer and ingest's consumer,
dead-letter producer and admin client the same security arguments (recorded by fake kafka-python
classes), the settings reach executors pickled with the publisher config, and inconsistent
settings are refused up front."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import kafka
import pytest

from capture_agent import KafkaSecurity, ProvenanceSession
from capture_agent import publisher as publisher_module
from capture_agent.publisher import PublisherConfig, producer_for
from ingest_service.clients import dlq_producer, kafka_consumer
from ingest_service.settings import IngestSettings
from ingest_service.topics import ensure_topics

ENV = {
    "SPARKPROV_KAFKA_BOOTSTRAP": "broker-1:9093,broker-2:9093",
    "SPARKPROV_KAFKA_SECURITY_PROTOCOL": "sasl_ssl",
    "SPARKPROV_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "SPARKPROV_KAFKA_SASL_USERNAME": "lineage",
    "SPARKPROV_KAFKA_SASL_PASSWORD": "not-a-real-password",
    "SPARKPROV_KAFKA_SSL_CAFILE": "/etc/kafka/ca.pem",
    "SPARKPROV_KAFKA_SSL_CERTFILE": "/etc/kafka/client.pem",
    "SPARKPROV_KAFKA_SSL_KEYFILE": "/etc/kafka/client.key",
}
EXPECTED = {
    "security_protocol": "SASL_SSL",
    "sasl_mechanism": "SCRAM-SHA-512",
    "sasl_plain_username": "lineage",
    "sasl_plain_password": "not-a-real-password",
    "ssl_cafile": "/etc/kafka/ca.pem",
    "ssl_certfile": "/etc/kafka/client.pem",
    "ssl_keyfile": "/etc/kafka/client.key",
}
# kafka-python's security arguments (all three clients take the same ones).
SECURITY_ARGS = {
    name
    for name in kafka.KafkaProducer.DEFAULT_CONFIG
    if name.startswith(("security_", "sasl_", "ssl_"))
}


class _Recorder:
    """Stands in for a kafka-python client class: records its keyword arguments."""

    made: list[tuple[str, dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.made.append((type(self).__name__, kwargs))

    def list_topics(self) -> list[str]:
        return []

    def create_topics(self, topics: list[Any]) -> None:
        pass

    def close(self, *args: Any, **kwargs: Any) -> None:
        pass


class KafkaProducer(_Recorder):
    pass


class KafkaConsumer(_Recorder):
    pass


class KafkaAdminClient(_Recorder):
    pass


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    for fake in (KafkaProducer, KafkaConsumer, KafkaAdminClient):
        monkeypatch.setattr(kafka, fake.__name__, fake)
    monkeypatch.setattr(publisher_module, "_producers", {})
    records: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(_Recorder, "made", records)
    yield records


class _FakeSparkContext:
    def accumulator(self, value: Any, param: Any) -> object:
        return object()


class _FakeSpark:
    sparkContext = _FakeSparkContext()  # noqa: N815 - pyspark's name


def _security(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if k in SECURITY_ARGS}


def test_capture_and_ingest_give_every_client_the_same_security_arguments(
    made: list[tuple[str, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    session = ProvenanceSession(_FakeSpark(), "wf", capture="python")  # type: ignore[arg-type]
    producer_for(session.emitter.config)  # type: ignore[attr-defined]
    settings = IngestSettings.from_env(ENV)
    kafka_consumer(settings)
    dlq_producer(settings)
    ensure_topics(settings)

    assert [name for name, _ in made] == [
        "KafkaProducer",
        "KafkaConsumer",
        "KafkaProducer",
        "KafkaAdminClient",
    ]
    for name, kwargs in made:
        assert _security(kwargs) == EXPECTED, name
        assert kwargs["bootstrap_servers"] == ["broker-1:9093", "broker-2:9093"], name


def test_without_settings_every_client_is_plaintext(
    made: list[tuple[str, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    session = ProvenanceSession(_FakeSpark(), "wf", capture="python")  # type: ignore[arg-type]
    producer_for(session.emitter.config)  # type: ignore[attr-defined]
    settings = IngestSettings.from_env({})
    kafka_consumer(settings)
    dlq_producer(settings)
    ensure_topics(settings)
    assert len(made) == 4
    for name, kwargs in made:
        assert _security(kwargs) == {"security_protocol": "PLAINTEXT"}, name


def test_a_session_argument_overrides_the_environment(
    made: list[tuple[str, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    given = KafkaSecurity(security_protocol="SSL", ssl_cafile="/other/ca.pem")
    session = ProvenanceSession(  # type: ignore[arg-type]
        _FakeSpark(), "wf", kafka_security=given, capture="python"
    )
    producer_for(session.emitter.config)  # type: ignore[attr-defined]
    assert _security(made[0][1]) == {"security_protocol": "SSL", "ssl_cafile": "/other/ca.pem"}


def test_executors_get_the_settings_inside_the_pickled_config(
    made: list[tuple[str, dict[str, Any]]],
) -> None:
    config = PublisherConfig("b:9093", "t", security=KafkaSecurity.from_env(ENV))
    on_executor = pickle.loads(pickle.dumps(config))
    assert on_executor == config
    producer_for(on_executor)
    # A producer per bootstrap and security: a plaintext session does not reuse the SASL one.
    producer_for(PublisherConfig("b:9093", "t"))
    producer_for(on_executor)
    assert [_security(kwargs) for _, kwargs in made] == [
        EXPECTED,
        {"security_protocol": "PLAINTEXT"},
    ]


def test_the_password_stays_out_of_reprs() -> None:
    security = KafkaSecurity.from_env(ENV)
    assert "not-a-real-password" not in repr(security)
    assert "not-a-real-password" not in repr(IngestSettings.from_env(ENV))
    assert "not-a-real-password" not in repr(PublisherConfig("b", "t", security=security))


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SPARKPROV_KAFKA_SECURITY_PROTOCOL": "TLS"}, "not one of"),
        ({"SPARKPROV_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"}, "needs a SASL mechanism"),
        (
            {
                "SPARKPROV_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                "SPARKPROV_KAFKA_SASL_MECHANISM": "PLAIN",
            },
            "needs a user name and a password",
        ),
        ({"SPARKPROV_KAFKA_SASL_USERNAME": "u"}, "does not authenticate with SASL"),
        ({"SPARKPROV_KAFKA_SSL_CAFILE": "/ca.pem"}, "does not use TLS"),
        (
            {"SPARKPROV_KAFKA_SECURITY_PROTOCOL": "SSL", "SPARKPROV_KAFKA_SSL_CERTFILE": "/c.pem"},
            "needs both",
        ),
    ],
)
def test_inconsistent_settings_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KafkaSecurity.from_env(env)
    with pytest.raises(ValueError, match=message):
        IngestSettings.from_env(env)


def test_the_jvm_taps_producer_gets_the_same_settings_in_javas_names() -> None:
    """The JVM capture points' Kafka Java client (capture_agent.jvm.kafka_settings): the same
    protocol, mechanism, credentials and PEM files, under the Java client's names (the JAAS entry
    and the PEM key store are made on the JVM side: io.sparkprov.capture.Producers)."""
    from capture_agent.jvm import kafka_settings

    settings = kafka_settings(
        PublisherConfig("broker-1:9093,broker-2:9093", "t", security=KafkaSecurity.from_env(ENV))
    )
    assert settings["bootstrap.servers"] == "broker-1:9093,broker-2:9093"
    assert settings["acks"] == "all" and settings["enable.idempotence"] == "true"
    assert {k: v for k, v in settings.items() if "ssl" in k or "sasl" in k or "security" in k} == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sparkprov.sasl.username": "lineage",
        "sparkprov.sasl.password": "not-a-real-password",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/kafka/ca.pem",
        "sparkprov.ssl.certfile": "/etc/kafka/client.pem",
        "sparkprov.ssl.keyfile": "/etc/kafka/client.key",
    }
    plaintext = kafka_settings(PublisherConfig("b:9092", "t"))
    assert plaintext["security.protocol"] == "PLAINTEXT"
    assert not any("sasl" in k or "ssl" in k for k in plaintext)
