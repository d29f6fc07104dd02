"""Settings of the capture agent: every variable it reads, read once from the driver's environment.

:class:`CaptureSettings` is the one place in ``capture_agent`` that reads ``os.environ``.
``ProvenanceSession`` builds one per session (``CaptureSettings.from_env()``, or takes one as
``settings=``) and its keyword arguments override it (:meth:`CaptureSettings.overridden`). Values
are parsed and checked here, so a bad one fails the session at its start with a
:class:`SettingsError` naming the variable, not a task later. The executors read no environment:
what they need travels pickled in the publisher config and the capture points' plans.

The names are in README.md's settings table (a unit test checks every ``SPARKPROV_*`` name the
code reads is there). ``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG`` and ``OPENLINEAGE_PARENT_ID`` are
OpenLineage's own variables (its client reads them too); they are read here only to decide whether
events are on and which orchestrator run is the parent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from capture_agent.errors import SettingsError
from sparkprov import defaults
from sparkprov.kafka_security import ENV_SECURITY_PROTOCOL, KafkaSecurity

__all__ = [
    "CAPTURE_PATHS",
    "ENV_CAPTURE",
    "ENV_CAPTURE_JAR",
    "ENV_RESULTS_PATH",
    "ENV_SOURCE_POSITIONS",
    "CaptureSettings",
]

ENV_CAPTURE = "SPARKPROV_CAPTURE"  # "jvm" (the default) or "python": where capture points run
ENV_CAPTURE_JAR = "SPARKPROV_CAPTURE_JAR"  # another capture jar than the package's
ENV_RESULTS_PATH = "SPARKPROV_RESULTS_PATH"  # where reuse=True stores sink results
ENV_SOURCE_POSITIONS = "SPARKPROV_SOURCE_POSITIONS"  # "file" (the default) or "partition"
CAPTURE_PATHS = ("jvm", "python")
SOURCE_POSITIONS = ("file", "partition")

_ON = {"1", "true", "yes", "on"}  # as sparkprov.defaults.is_on reads a boolean setting
_OFF = {"", "0", "false", "no", "off"}


@dataclass(frozen=True)
class CaptureSettings:
    # False is the kill switch (SPARKPROV_DISABLED=1): the session hands back plain DataFrames
    # and publishes nothing (capture_agent.passthrough).
    enabled: bool = True
    kafka_bootstrap: str = defaults.KAFKA_BOOTSTRAP
    topic: str = defaults.TOPIC
    # TLS and SASL of the producers, the driver's and the executors' (sparkprov.kafka_security).
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity)
    kafka_compression: str = defaults.KAFKA_COMPRESSION
    # Where the capture points run: "jvm" (the capture jar) or "python" (pandas UDFs).
    capture: str = "jvm"
    # How source rows are identified (capture_agent.sources): "file" (parquet rows by file and
    # row index, others by partition and offset) or "partition" (all by partition and offset).
    source_positions: str = "file"
    # The capture jar's path; empty: the one in the package (`make setup` builds it).
    capture_jar: str = ""
    # OpenLineage run events when ProvenanceSession(openlineage=...) is not given.
    openlineage: bool = False
    # OPENLINEAGE_PARENT_ID ("namespace/job/runId"): the orchestrator's run, when Spark's
    # settings do not name one (capture_agent.openlineage.Parent).
    openlineage_parent_id: str = ""
    # Where reuse=True stores sink results; empty: `results` in the user's data directory.
    results_path: str = ""
    # The query service's address: the namespace of relations with no physical identity and
    # the address in the OpenLineage run facet.
    query_address: str = defaults.GRPC_ADDR

    def __post_init__(self) -> None:
        if self.capture not in CAPTURE_PATHS:
            raise SettingsError(
                f"capture ({ENV_CAPTURE}) must be 'jvm' or 'python', got {self.capture!r}"
            )
        if self.source_positions not in SOURCE_POSITIONS:
            raise SettingsError(
                f"source positions ({ENV_SOURCE_POSITIONS}) must be 'file' or 'partition', "
                f"got {self.source_positions!r}"
            )
        if self.kafka_compression not in defaults.KAFKA_COMPRESSIONS:
            raise SettingsError(
                f"{defaults.ENV_KAFKA_COMPRESSION} must be one of "
                f"{', '.join(defaults.KAFKA_COMPRESSIONS)}, got {self.kafka_compression!r}"
            )
        for name, value, variable in (
            ("kafka_bootstrap", self.kafka_bootstrap, defaults.ENV_KAFKA_BOOTSTRAP),
            ("topic", self.topic, defaults.ENV_TOPIC),
            ("query_address", self.query_address, defaults.ENV_GRPC_ADDR),
        ):
            if not value.strip():
                raise SettingsError(f"{name} ({variable}) must not be empty")

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, enabled: bool | None = None
    ) -> CaptureSettings:
        """The settings ``environ`` (default: this process's environment) gives; unset
        variables keep their defaults. ``enabled``: the kill switch as the caller decided it
        (``ProvenanceSession(enabled=...)``), else ``SPARKPROV_DISABLED``. With capture off
        nothing else is read, so no broken setting can stop a job that runs without capture."""
        env = os.environ if environ is None else environ
        if enabled is None:
            enabled = not _flag(env, defaults.ENV_DISABLED)
        if not enabled:
            return cls(enabled=False)

        def text(name: str, default: str = "") -> str:
            return env.get(name, "").strip() or default

        try:
            security = KafkaSecurity.from_env(env)
        except ValueError as e:  # one error type for every setting, naming the variables
            raise SettingsError(
                f"Kafka security ({ENV_SECURITY_PROTOCOL}, SPARKPROV_KAFKA_SASL_*, "
                f"SPARKPROV_KAFKA_SSL_*): {e}"
            ) from e
        return cls(
            kafka_bootstrap=text(defaults.ENV_KAFKA_BOOTSTRAP, defaults.KAFKA_BOOTSTRAP),
            topic=text(defaults.ENV_TOPIC, defaults.TOPIC),
            kafka_security=security,
            kafka_compression=text(
                defaults.ENV_KAFKA_COMPRESSION, defaults.KAFKA_COMPRESSION
            ).lower(),
            capture=text(ENV_CAPTURE, cls.capture).lower(),
            capture_jar=text(ENV_CAPTURE_JAR),
            source_positions=text(ENV_SOURCE_POSITIONS, cls.source_positions).lower(),
            openlineage=bool(
                text("OPENLINEAGE_URL")
                or text("OPENLINEAGE_CONFIG")
                or _flag(env, defaults.ENV_OPENLINEAGE)
            ),
            openlineage_parent_id=text("OPENLINEAGE_PARENT_ID"),
            results_path=text(ENV_RESULTS_PATH),
            query_address=text(defaults.ENV_GRPC_ADDR, defaults.GRPC_ADDR),
        )

    def overridden(self, **given: Any) -> CaptureSettings:
        """These settings with the fields ``given`` a value (ProvenanceSession's keyword
        arguments); None or "" leaves a field as it is, as an argument left out."""
        changes = {name: value for name, value in given.items() if value not in (None, "")}
        if isinstance(changes.get("capture"), str):
            changes["capture"] = changes["capture"].strip().lower()
        return replace(self, **changes)


def _flag(environ: Mapping[str, str], name: str) -> bool:
    value = environ.get(name, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    # A kill switch misspelt must not leave capture silently on (nor a typo turn it off).
    raise SettingsError(f"{name} must be 1, true, yes or on, or 0, false, no or off; got {value!r}")
