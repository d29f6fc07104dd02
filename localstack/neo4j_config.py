"""Neo4j's settings that matter for writes, one table for the local stack and docker-compose.

Each setting has an environment variable and a default; the local stack writes them to
``<stack>/neo4j/neo4j.conf`` (read by our embedded launcher) and turns the heap sizes into the
JVM's ``-Xms``/``-Xmx``; docker-compose passes the same variables, with the same defaults, to the
official image as ``NEO4J_<name>`` (a unit test checks that the two agree).

Defaults suit a 2-core, 24 GB machine shared with Spark and Kafka. Neo4j's own default keeps the
transaction logs of the last 2 days: through a long load that is every log ever written (a run of
~22M records left ~24 GB), so the retention here is bounded by size. Neo4j prunes logs only after
a checkpoint, so between two checkpoints the logs may exceed the bound by what was written since.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["SETTINGS", "Neo4jConfig", "Setting", "docker_env_name", "size_bytes"]


@dataclass(frozen=True)
class Setting:
    field: str  # of Neo4jConfig
    env: str
    neo4j: str  # Neo4j 5.26's setting name


SETTINGS = (
    Setting("pagecache", "SPARKPROV_NEO4J_PAGECACHE", "server.memory.pagecache.size"),
    Setting("heap_initial", "SPARKPROV_NEO4J_HEAP_INITIAL", "server.memory.heap.initial_size"),
    Setting("heap_max", "SPARKPROV_NEO4J_HEAP_MAX", "server.memory.heap.max_size"),
    Setting(
        "tx_log_retention",
        "SPARKPROV_NEO4J_TX_LOG_RETENTION",
        "db.tx_log.rotation.retention_policy",
    ),
    Setting(
        "tx_log_rotation_size", "SPARKPROV_NEO4J_TX_LOG_ROTATION_SIZE", "db.tx_log.rotation.size"
    ),
    Setting(
        "checkpoint_interval", "SPARKPROV_NEO4J_CHECKPOINT_INTERVAL", "db.checkpoint.interval.time"
    ),
)
# Read by the JVM (the launcher's -Xms/-Xmx), not by the embedded database.
_HEAP = {"heap_initial", "heap_max"}
_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]?)(?:i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size_bytes(text: str) -> int:
    """Bytes of a size as Neo4j and the JVM both read it: ``4G``, ``512m``, ``1024k``, ``65536``."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (a whole number with an optional K, M or G)")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def docker_env_name(neo4j_name: str) -> str:
    """The official image's variable for a setting: ``_`` doubled, then ``.`` as ``_``."""
    return "NEO4J_" + neo4j_name.replace("_", "__").replace(".", "_")


@dataclass(frozen=True)
class Neo4jConfig:
    pagecache: str = "4G"  # allocated as the store grows; the indexes of ~20M records fit
    heap_initial: str = "512M"
    heap_max: str = "2G"  # transaction state of one ingest flush (20k records) and its id updates
    tx_log_retention: str = "512M size"  # Neo4j's default, "2 days", is unbounded during a load
    tx_log_rotation_size: str = "256M"  # the granularity of pruning
    checkpoint_interval: str = "15m"  # pruning runs after each checkpoint

    def __post_init__(self) -> None:
        for name in ("pagecache", "heap_initial", "heap_max", "tx_log_rotation_size"):
            size_bytes(getattr(self, name))  # fail at startup, not in the JVM's log

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Neo4jConfig:
        defaults = cls()
        return cls(**{s.field: environ.get(s.env, getattr(defaults, s.field)) for s in SETTINGS})

    def values(self) -> dict[str, str]:
        """Every setting by its Neo4j name (what docker-compose gives the server)."""
        return {s.neo4j: getattr(self, s.field) for s in SETTINGS}

    def database_settings(self) -> dict[str, str]:
        """The settings the embedded database reads (neo4j.conf); the heap is the JVM's."""
        return {s.neo4j: getattr(self, s.field) for s in SETTINGS if s.field not in _HEAP}

    def conf_text(self, http_addr: str = "", bolt_addr: str = "") -> str:
        """neo4j.conf's text; with ``http_addr`` (host:port) the HTTP connector is on there, as
        in the official image: the transactional Cypher endpoint and Neo4j Browser. Neo4j
        Browser connects to the Bolt address the server advertises: ``bolt_addr``, when Bolt
        does not listen on the default port."""
        settings = self.database_settings()
        if http_addr:
            settings["server.http.enabled"] = "true"
            settings["server.http.listen_address"] = http_addr
        if bolt_addr:
            settings["server.bolt.advertised_address"] = bolt_addr
        return "".join(f"{name}={value}\n" for name, value in settings.items())

    def jvm_heap_flags(self) -> list[str]:
        """``-Xms``/``-Xmx``; a maximum set below the initial size lowers the initial with it
        (a JVM refuses to start with ``-Xms`` above ``-Xmx``)."""
        maximum = size_bytes(self.heap_max)
        return [
            f"-Xms{min(size_bytes(self.heap_initial), maximum) // 1024}k",
            f"-Xmx{maximum // 1024}k",
        ]
