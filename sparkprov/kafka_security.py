"""How our Kafka clients authenticate and encrypt: one definition for the capture agent and ingest.

The capture agent's producer and ingest's consumer, dead-letter producer and admin client all pass
``KafkaSecurity.as_kafka_kwargs()`` to kafka-python, so the same environment gives both sides the
same client settings (a test holds them to it). The capture driver builds it once and it travels
to executors pickled inside the publisher config: executors need no environment of their own.

Inconsistent settings (a SASL mechanism on a protocol without SASL, a certificate on a plaintext
connection, a mechanism without credentials) are refused when the object is built, not left for
the broker to reject with a bare disconnect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ENV_SASL_MECHANISM",
    "ENV_SASL_PASSWORD",
    "ENV_SASL_USERNAME",
    "ENV_SECURITY_PROTOCOL",
    "ENV_SSL_CAFILE",
    "ENV_SSL_CERTFILE",
    "ENV_SSL_KEYFILE",
    "KafkaSecurity",
]

ENV_SECURITY_PROTOCOL = "SPARKPROV_KAFKA_SECURITY_PROTOCOL"
ENV_SASL_MECHANISM = "SPARKPROV_KAFKA_SASL_MECHANISM"
ENV_SASL_USERNAME = "SPARKPROV_KAFKA_SASL_USERNAME"
ENV_SASL_PASSWORD = "SPARKPROV_KAFKA_SASL_PASSWORD"
ENV_SSL_CAFILE = "SPARKPROV_KAFKA_SSL_CAFILE"
ENV_SSL_CERTFILE = "SPARKPROV_KAFKA_SSL_CERTFILE"
ENV_SSL_KEYFILE = "SPARKPROV_KAFKA_SSL_KEYFILE"

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# The mechanisms that authenticate with a user name and password (kafka-python's
# sasl_plain_username / sasl_plain_password serve all three).
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class KafkaSecurity:
    """kafka-python's security settings; the defaults are a plaintext, unauthenticated client."""

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = ""
    sasl_plain_username: str = ""
    # Not in the repr: settings objects end up in logs and in task failure messages.
    sasl_plain_password: str = field(default="", repr=False)
    # PEM files: the CA that signed the brokers' certificates (the system's when empty), and a
    # client certificate and key for brokers that require mutual TLS.
    ssl_cafile: str = ""
    ssl_certfile: str = ""
    ssl_keyfile: str = ""

    def __post_init__(self) -> None:
        if self.security_protocol not in _PROTOCOLS:
            raise ValueError(
                f"Kafka security protocol {self.security_protocol!r} is not one of {_PROTOCOLS}"
            )
        sasl = self.security_protocol.startswith("SASL_")
        if sasl and self.sasl_mechanism not in _MECHANISMS:
            raise ValueError(
                f"Kafka security protocol {self.security_protocol} needs a SASL mechanism "
                f"({ENV_SASL_MECHANISM}), one of {_MECHANISMS}; got {self.sasl_mechanism!r}"
            )
        if sasl and not (self.sasl_plain_username and self.sasl_plain_password):
            raise ValueError(
                f"Kafka SASL {self.sasl_mechanism} needs a user name and a password "
                f"({ENV_SASL_USERNAME}, {ENV_SASL_PASSWORD})"
            )
        given_sasl = self.sasl_mechanism or self.sasl_plain_username or self.sasl_plain_password
        if not sasl and given_sasl:
            raise ValueError(
                f"Kafka SASL settings are given but security protocol {self.security_protocol} "
                "does not authenticate with SASL (use SASL_SSL or SASL_PLAINTEXT)"
            )
        tls = self.security_protocol in ("SSL", "SASL_SSL")
        if not tls and (self.ssl_cafile or self.ssl_certfile or self.ssl_keyfile):
            raise ValueError(
                f"Kafka TLS files are given but security protocol {self.security_protocol} "
                "does not use TLS (use SSL or SASL_SSL)"
            )
        if bool(self.ssl_certfile) != bool(self.ssl_keyfile):
            raise ValueError(
                f"a Kafka client certificate needs both {ENV_SSL_CERTFILE} and {ENV_SSL_KEYFILE}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> KafkaSecurity:
        def get(name: str) -> str:
            return environ.get(name, "").strip()

        return cls(
            security_protocol=get(ENV_SECURITY_PROTOCOL).upper() or cls.security_protocol,
            sasl_mechanism=get(ENV_SASL_MECHANISM).upper(),
            sasl_plain_username=get(ENV_SASL_USERNAME),
            # A password may legitimately start or end with blanks: taken as given.
            sasl_plain_password=environ.get(ENV_SASL_PASSWORD, ""),
            ssl_cafile=get(ENV_SSL_CAFILE),
            ssl_certfile=get(ENV_SSL_CERTFILE),
            ssl_keyfile=get(ENV_SSL_KEYFILE),
        )

    def as_java_settings(self) -> dict[str, str]:
        """Settings for Kafka's Java client (the capture agent's JVM taps). SASL credentials and
        the client certificate travel as ``sparkprov.*`` entries, which the JVM side turns into
        ``sasl.jaas.config`` and PEM key store entries (io.sparkprov.capture.Producers): the
        login module's class name is the shaded one, known only there."""
        settings = {"security.protocol": self.security_protocol}
        if self.security_protocol.startswith("SASL_"):
            settings["sasl.mechanism"] = self.sasl_mechanism
            settings["sparkprov.sasl.username"] = self.sasl_plain_username
            settings["sparkprov.sasl.password"] = self.sasl_plain_password
        if self.ssl_cafile:
            settings["ssl.truststore.type"] = "PEM"
            settings["ssl.truststore.location"] = self.ssl_cafile
        if self.ssl_certfile:
            settings["sparkprov.ssl.certfile"] = self.ssl_certfile
            settings["sparkprov.ssl.keyfile"] = self.ssl_keyfile
        return settings

    def as_kafka_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``KafkaProducer``, ``KafkaConsumer`` and ``KafkaAdminClient``:
        only what is set, so kafka-python's own defaults hold for the rest."""
        kwargs: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.security_protocol.startswith("SASL_"):
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.sasl_plain_username
            kwargs["sasl_plain_password"] = self.sasl_plain_password
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            value = getattr(self, name)
            if value:
                kwargs[name] = value
        return kwargs
