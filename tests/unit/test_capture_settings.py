"""capture_agent.settings without Spark: every variable the capture agent reads is parsed in one
place, bad values are refused naming the variable, the kill switch reads nothing else, and
ProvenanceSession's keyword arguments override the environment (a stand-in SparkContext,
Python capture points: nothing is started)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from capture_agent import (
    CaptureError,
    CaptureSettings,
    KafkaSecurity,
    ProvenanceSession,
    SettingsError,
)
from capture_agent.emitters import KafkaEmitter, NoopEmitter

ROOT = Path(__file__).resolve().parents[2]

EVERY = {
    "SPARKPROV_KAFKA_BOOTSTRAP": "broker-1:9093",
    "SPARKPROV_TOPIC": "lineage.t",
    "SPARKPROV_KAFKA_COMPRESSION": "GZIP",
    "SPARKPROV_KAFKA_SECURITY_PROTOCOL": "ssl",
    "SPARKPROV_KAFKA_SSL_CAFILE": "/etc/ca.pem",
    "SPARKPROV_CAPTURE": " Python ",
    "SPARKPROV_CAPTURE_JAR": "/opt/capture.jar",
    "SPARKPROV_SOURCE_POSITIONS": "Partition",
    "SPARKPROV_OPENLINEAGE": "yes",
    "OPENLINEAGE_PARENT_ID": "airflow/dag.task/0193b1b6",
    "SPARKPROV_RESULTS_PATH": "/shared/results",
    "SPARKPROV_GRPC_ADDR": "query:50051",
    "SPARKPROV_DISABLED": "0",
}


def test_every_variable_is_read_into_one_typed_object() -> None:
    settings = CaptureSettings.from_env(EVERY)
    assert settings == CaptureSettings(
        enabled=True,
        kafka_bootstrap="broker-1:9093",
        topic="lineage.t",
        kafka_security=KafkaSecurity(security_protocol="SSL", ssl_cafile="/etc/ca.pem"),
        kafka_compression="gzip",
        capture="python",
        capture_jar="/opt/capture.jar",
        source_positions="partition",
        openlineage=True,
        openlineage_parent_id="airflow/dag.task/0193b1b6",
        results_path="/shared/results",
        query_address="query:50051",
    )
    assert CaptureSettings.from_env({}) == CaptureSettings()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SPARKPROV_CAPTURE", "scala"),
        ("SPARKPROV_SOURCE_POSITIONS", "row"),
        ("SPARKPROV_KAFKA_COMPRESSION", "brotli"),
        ("SPARKPROV_DISABLED", "maybe"),
        ("SPARKPROV_OPENLINEAGE", "sure"),
        ("SPARKPROV_KAFKA_SECURITY_PROTOCOL", "SASL_SSL"),  # no mechanism, no credentials
    ],
)
def test_a_bad_value_is_refused_naming_its_variable(variable: str, value: str) -> None:
    with pytest.raises(SettingsError, match=variable) as raised:
        CaptureSettings.from_env({variable: value})
    assert isinstance(raised.value, CaptureError) and isinstance(raised.value, ValueError)


def test_the_kill_switch_reads_nothing_else() -> None:
    """A job that runs with capture off must not fail for a capture setting."""
    broken = {"SPARKPROV_CAPTURE": "scala", "SPARKPROV_KAFKA_COMPRESSION": "brotli"}
    for on in ("1", "true", "YES", " on "):
        assert CaptureSettings.from_env({**broken, "SPARKPROV_DISABLED": on}) == CaptureSettings(
            enabled=False
        )
    assert CaptureSettings.from_env(broken, enabled=False) == CaptureSettings(enabled=False)
    with pytest.raises(SettingsError, match="SPARKPROV_CAPTURE"):
        CaptureSettings.from_env({**broken, "SPARKPROV_DISABLED": "1"}, enabled=True)


def _spark() -> Any:
    return SimpleNamespace(sparkContext=SimpleNamespace(accumulator=lambda *a: None))


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The process environment as EVERY, without the SSL settings and with Python capture."""
    import os

    for name in list(os.environ):
        if name.startswith(("SPARKPROV_", "OPENLINEAGE_")):
            monkeypatch.delenv(name)
    env = {k: v for k, v in EVERY.items() if "SECURITY" not in k and "SSL" not in k}
    env["SPARKPROV_OPENLINEAGE"] = "0"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def test_the_session_reads_the_environment_once_and_its_arguments_win(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prov = ProvenanceSession(_spark(), "w")
    assert prov.settings == CaptureSettings.from_env(environ)
    assert isinstance(prov.emitter, KafkaEmitter)
    config = prov.emitter.config
    assert (config.bootstrap, config.topic, config.compression) == (
        "broker-1:9093",
        "lineage.t",
        "gzip",
    )
    assert prov.capture_path == "python" and prov.capture.jvm is None

    monkeypatch.setenv("SPARKPROV_TOPIC", "changed.later")  # read once: the session keeps its own
    assert prov.settings.topic == "lineage.t"

    given = KafkaSecurity(security_protocol="SSL")
    prov = ProvenanceSession(
        _spark(), "w", bootstrap="b:1", topic="t", kafka_security=given, results_path=Path("/r")
    )
    assert isinstance(prov.emitter, KafkaEmitter)
    config = prov.emitter.config
    assert (config.bootstrap, config.topic, config.security) == ("b:1", "t", given)
    assert prov.settings.results_path == "/r" and prov.settings.capture == "python"
    with pytest.raises(SettingsError, match="'jvm' or 'python'"):
        ProvenanceSession(_spark(), "w", capture="scala")


def test_the_kill_switch_from_the_environment_or_the_argument(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARKPROV_DISABLED", "1")
    monkeypatch.setenv("SPARKPROV_CAPTURE", "scala")  # not read with capture off
    off = ProvenanceSession(_spark(), "w")
    assert not off.enabled and isinstance(off.emitter, NoopEmitter)
    # The job's own enabled=True wins, and then the environment is read (and checked).
    monkeypatch.setenv("SPARKPROV_CAPTURE", "python")
    on = ProvenanceSession(_spark(), "w", enabled=True)
    assert on.enabled and on.settings.kafka_bootstrap == "broker-1:9093"
    monkeypatch.delenv("SPARKPROV_DISABLED")
    assert not ProvenanceSession(_spark(), "w", enabled=False).enabled


def test_only_the_settings_module_reads_the_environment() -> None:
    readers = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "capture_agent").rglob("*.py")
        if re.search(r"os\.environ|os\.getenv|getenv\(", path.read_text())
    }
    assert readers == {"capture_agent/settings.py"}
