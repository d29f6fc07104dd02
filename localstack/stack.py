"""Start, check and stop the five local processes, each tracked by a pid file.

A pid file holds the pid and the process start time (from /proc), so ``down`` never signals a
process that merely reused the pid. Data and logs live under the stack folder (``.stack/``).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from localstack.neo4j_config import Neo4jConfig, size_bytes
from sparkprov import defaults

__all__ = ["Stack", "StackError", "StackSettings", "kafka_cluster_id"]

log = logging.getLogger(__name__)


class StackError(RuntimeError):
    """A process of the local stack failed to start or to become healthy."""


def _host_port(address: str, default_port: int) -> tuple[str, int]:
    address = address.split("://", 1)[-1].split(",", 1)[0]
    host, _, port = address.rpartition(":")
    return (host or "127.0.0.1"), int(port or default_port)


@dataclass(frozen=True)
class StackSettings:
    directory: Path
    kafka_bootstrap: str = defaults.KAFKA_BOOTSTRAP
    kafka_controller_port: int = 9093
    neo4j_uri: str = defaults.NEO4J_URI
    grpc_addr: str = defaults.GRPC_ADDR
    ingest_http_addr: str = defaults.INGEST_HTTP_ADDR
    neo4j_http_addr: str = defaults.NEO4J_HTTP_ADDR
    viewer_addr: str = defaults.VIEWER_ADDR
    java: str = "java"
    start_timeout_s: float = 180.0
    neo4j: Neo4jConfig = field(default_factory=Neo4jConfig)
    extra_env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, directory: Path, environ: Mapping[str, str]) -> StackSettings:
        return cls(
            directory=directory.resolve(),
            kafka_bootstrap=environ.get(defaults.ENV_KAFKA_BOOTSTRAP, defaults.KAFKA_BOOTSTRAP),
            kafka_controller_port=int(environ.get("SPARKPROV_KAFKA_CONTROLLER_PORT", "9093")),
            neo4j_uri=environ.get(defaults.ENV_NEO4J_URI, defaults.NEO4J_URI),
            grpc_addr=environ.get(defaults.ENV_GRPC_ADDR, defaults.GRPC_ADDR),
            ingest_http_addr=environ.get(defaults.ENV_INGEST_HTTP_ADDR, defaults.INGEST_HTTP_ADDR),
            neo4j_http_addr=environ.get(defaults.ENV_NEO4J_HTTP_ADDR, defaults.NEO4J_HTTP_ADDR),
            viewer_addr=environ.get(defaults.ENV_VIEWER_ADDR, defaults.VIEWER_ADDR),
            java=environ.get("SPARKPROV_JAVA", "java"),
            start_timeout_s=float(environ.get("SPARKPROV_STACK_TIMEOUT_S", "180")),
            neo4j=Neo4jConfig.from_env(environ),
            extra_env=dict(environ),
        )


@dataclass(frozen=True)
class _Component:
    name: str
    command: Callable[[], list[str]]
    healthy: Callable[[], bool]
    prepare: Callable[[], None] = lambda: None


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime), counted after the command name, which may contain spaces.
    return stat.rsplit(")", 1)[1].split()[19]


class Stack:
    """The local processes; ``up`` is idempotent and ``down`` stops only what it started."""

    ORDER = ("kafka", "neo4j", "ingest", "query", "viewer")

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.dir = settings.directory
        self._components = {
            "kafka": _Component(
                "kafka", self._kafka_command, self._kafka_healthy, self._kafka_prepare
            ),
            "neo4j": _Component(
                "neo4j", self._neo4j_command, self._neo4j_healthy, self._neo4j_prepare
            ),
            "ingest": _Component("ingest", self._ingest_command, self._ingest_healthy),
            "query": _Component("query", self._query_command, self._query_healthy),
            "viewer": _Component("viewer", self._viewer_command, self._viewer_healthy),
        }

    # -- public ---------------------------------------------------------------------------

    def up(self, names: tuple[str, ...] = ORDER) -> list[str]:
        """Start what is not running, wait until all are healthy; returns the names started."""
        started = []
        for name in names:
            component = self._components[name]
            pid = self.pid(name)
            if pid is not None:  # ours, already started: it must become healthy
                if self._wait_healthy(component, pid):
                    continue
                if _start_time(pid) is not None:
                    raise StackError(
                        f"{name} (pid {pid}) is running but not healthy; last log lines:\n"
                        f"{self._tail(name)}"
                    )
                # It was exiting (e.g. right after a SIGTERM) and is gone now: start a new one.
                log.info("%s (pid %d) exited while we waited for it; starting it again", name, pid)
                self._pidfile(name).unlink(missing_ok=True)
            if component.healthy():  # someone else's, on the configured address: reuse it
                continue
            self._start(component)
            started.append(name)
        return started

    def down(self, names: tuple[str, ...] = ORDER) -> list[str]:
        stopped = []
        for name in reversed(names):
            pid = self.pid(name)
            if pid is None:
                self._pidfile(name).unlink(missing_ok=True)
                continue
            self._stop(name, pid)
            stopped.append(name)
        return stopped

    def status(self) -> dict[str, tuple[int | None, bool]]:
        return {n: (self.pid(n), c.healthy()) for n, c in self._components.items()}

    def pid(self, name: str) -> int | None:
        """The pid of the process we started for ``name``, if it is still that process."""
        path = self._pidfile(name)
        try:
            pid_text, started = path.read_text().split()
            pid = int(pid_text)
        except (OSError, ValueError):
            return None
        return pid if _start_time(pid) == started else None

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Signal a component (tests use this for crash-recovery checks)."""
        pid = self.pid(name)
        if pid is None:
            raise StackError(f"{name} is not running under this stack")
        os.kill(pid, sig)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)

    def start(self, name: str) -> None:
        self._start(self._components[name])

    def healthy(self, name: str) -> bool:
        return self._components[name].healthy()

    # -- process handling -----------------------------------------------------------------

    def _pidfile(self, name: str) -> Path:
        return self.dir / "run" / f"{name}.pid"

    def log_path(self, name: str) -> Path:
        return self.dir / "logs" / f"{name}.log"

    def _env(self) -> dict[str, str]:
        s = self.settings
        env = dict(s.extra_env)
        env.update(
            {
                defaults.ENV_KAFKA_BOOTSTRAP: s.kafka_bootstrap,
                defaults.ENV_NEO4J_URI: s.neo4j_uri,
                defaults.ENV_GRPC_ADDR: s.grpc_addr,
                defaults.ENV_INGEST_HTTP_ADDR: s.ingest_http_addr,
                defaults.ENV_VIEWER_ADDR: s.viewer_addr,
            }
        )
        return env

    def _start(self, component: _Component) -> None:
        for sub in ("run", "logs", "data"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        component.prepare()
        log_file = self.log_path(component.name).open("ab")
        process = subprocess.Popen(  # noqa: S603 - our own fixed commands
            component.command(),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self._env(),
            cwd=self.dir.parent if (self.dir.parent / "pyproject.toml").exists() else None,
            start_new_session=True,
        )
        log_file.close()
        started = _start_time(process.pid)
        self._pidfile(component.name).write_text(f"{process.pid} {started}\n")
        log.info("started %s (pid %d)", component.name, process.pid)
        if not self._wait_healthy(component, process.pid, process):
            raise StackError(
                f"{component.name} did not become healthy within "
                f"{self.settings.start_timeout_s:.0f}s; last log lines "
                f"({self.log_path(component.name)}):\n{self._tail(component.name)}"
            )

    def _wait_healthy(
        self, component: _Component, pid: int | None, process: subprocess.Popen[bytes] | None = None
    ) -> bool:
        deadline = time.monotonic() + self.settings.start_timeout_s
        while time.monotonic() < deadline:
            if component.healthy():
                return True
            if process is not None and process.poll() is not None:
                return False
            if pid is not None and _start_time(pid) is None:
                return False
            time.sleep(0.5)
        return False

    def _stop(self, name: str, pid: int, timeout_s: float = 60.0) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and _start_time(pid) is not None:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
            if (
                Path(f"/proc/{pid}/stat").exists()
                and " Z " in Path(f"/proc/{pid}/stat").read_text()
            ):
                break
            time.sleep(0.2)
        else:
            if _start_time(pid) is not None:
                log.warning("%s (pid %d) ignored SIGTERM for %.0fs; killing", name, pid, timeout_s)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self._pidfile(name).unlink(missing_ok=True)
        log.info("stopped %s (pid %d)", name, pid)

    def _tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # -- Kafka ----------------------------------------------------------------------------

    def _kafka_config(self) -> Path:
        return self.dir / "kafka" / "server.properties"

    def _kafka_prepare(self) -> None:
        host, port = _host_port(self.settings.kafka_bootstrap, 9092)
        cport = self.settings.kafka_controller_port
        data = self.dir / "data" / "kafka"
        config = self._kafka_config()
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@{host}:{cport}",
                    f"listeners=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{cport}",
                    f"advertised.listeners=PLAINTEXT://{host}:{port}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={data}",
                    "num.partitions=4",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=4",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "message.max.bytes=8500000",
                    "replica.fetch.max.bytes=8500000",
                    "log.retention.hours=168",
                    "",
                ]
            )
        )
        (self.dir / "kafka" / "log4j.properties").write_text(
            "log4j.rootLogger=WARN, stdout\n"
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.kafka.server.KafkaServer=INFO\n"
            "log4j.logger.kafka.server.BrokerServer=INFO\n"
        )
        if not (data / "meta.properties").exists():
            cluster_id = kafka_cluster_id()
            result = subprocess.run(  # noqa: S603
                [
                    *self._kafka_java(),
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(config),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise StackError(
                    f"formatting Kafka storage failed:\n{result.stdout}{result.stderr}"
                )

    def _kafka_java(self) -> list[str]:
        lib = self.dir / "lib" / "kafka"
        if not lib.exists():
            raise StackError(f"{lib} is missing: run `make setup` first")
        return [
            self.settings.java,
            "-Xms256m",
            "-Xmx768m",
            f"-Dlog4j.configuration=file:{self.dir / 'kafka' / 'log4j.properties'}",
            "-cp",
            f"{lib}/*",
        ]

    def _kafka_command(self) -> list[str]:
        return [*self._kafka_java(), "kafka.Kafka", str(self._kafka_config())]

    def _kafka_healthy(self) -> bool:
        host, port = _host_port(self.settings.kafka_bootstrap, 9092)
        if not _port_open(host, port):
            return False
        try:
            from kafka import KafkaAdminClient

            admin = KafkaAdminClient(bootstrap_servers=f"{host}:{port}", request_timeout_ms=5000)
            try:
                admin.list_topics()
                return True
            finally:
                admin.close()
        except Exception:  # noqa: BLE001 - not ready yet
            return False

    # -- Neo4j ----------------------------------------------------------------------------

    def _neo4j_config(self) -> Path:
        return self.dir / "neo4j" / "neo4j.conf"

    def _neo4j_prepare(self) -> None:
        config = self._neo4j_config()
        config.parent.mkdir(parents=True, exist_ok=True)
        host, port = _host_port(self.settings.neo4j_uri, 7687)
        config.write_text(
            self.settings.neo4j.conf_text(self.settings.neo4j_http_addr, f"{host}:{port}")
        )

    def _neo4j_command(self) -> list[str]:
        lib = self.dir / "lib" / "neo4j"
        plugins = self.dir / "plugins"
        if not lib.exists() or not plugins.exists():
            raise StackError(f"{lib} or {plugins} is missing: run `make setup` first")
        host, port = _host_port(self.settings.neo4j_uri, 7687)
        neo4j = self.settings.neo4j
        return [
            self.settings.java,
            *neo4j.jvm_heap_flags(),
            "-XX:+UseG1GC",
            "-cp",
            f"{lib}/*:{plugins}/*",
            "io.sparkprov.stack.Neo4jLauncher",
            str(self.dir / "data" / "neo4j"),
            host,
            str(port),
            # Also in neo4j.conf; kept here for a launcher built before it read the file.
            str(size_bytes(neo4j.pagecache)),
            str(self._neo4j_config()),
        ]

    def _neo4j_healthy(self) -> bool:
        host, port = _host_port(self.settings.neo4j_uri, 7687)
        if not _port_open(host, port):
            return False
        try:
            import neo4j

            with neo4j.GraphDatabase.driver(self.settings.neo4j_uri, auth=None) as driver:
                driver.verify_connectivity()
        except Exception:  # noqa: BLE001 - not ready yet
            return False
        # The HTTP connector (Neo4j Browser, the transactional endpoint) starts with Bolt; an
        # empty address leaves it off (the benchmarks' private stacks).
        addr = self.settings.neo4j_http_addr
        return not addr or _http_ok(f"http://{addr}/")

    # -- our services ---------------------------------------------------------------------

    def _ingest_command(self) -> list[str]:
        return [sys.executable, "-m", "ingest_service"]

    def _ingest_healthy(self) -> bool:
        return _http_ok(f"http://{self.settings.ingest_http_addr}/healthz")

    def _query_command(self) -> list[str]:
        return [sys.executable, "-m", "query_service"]

    def _query_healthy(self) -> bool:
        host, port = _host_port(self.settings.grpc_addr, 50051)
        if not _port_open(host, port):
            return False
        try:
            import grpc
            from grpc_health.v1 import health_pb2, health_pb2_grpc

            with grpc.insecure_channel(f"{host}:{port}") as channel:
                reply = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=2
                )
            return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)
        except Exception:  # noqa: BLE001 - not ready yet
            return False

    def _viewer_command(self) -> list[str]:
        return [sys.executable, "-m", "viewer"]

    def _viewer_healthy(self) -> bool:
        return _http_ok(f"http://{self.settings.viewer_addr}/healthz")


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback
            return bool(response.status == 200)
    except OSError:
        return False


def kafka_cluster_id(draw: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64, as ``kafka-storage random-uuid``
    prints. Like Kafka's own ``Uuid.randomUuid``, never one that starts with '-': the storage
    tool's argument parser would read it as an option (one id in 64 did, and failed the stack)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(draw().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0
