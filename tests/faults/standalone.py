"""A Spark standalone cluster on this machine, for tests that need what local mode never does
(speculative copies, executors in JVMs of their own): a master and two workers, each worker
under a host name of its own ("127.0.0.1" and "localhost"), because Spark never places a
speculative copy on the host that runs the original attempt. Everything listens on 127.0.0.1;
the processes are this module's own and are stopped by pid."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

from tests.faults.streams import free_port

WORKER_HOSTS = ("127.0.0.1", "localhost")


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise RuntimeError(f"{log.name}: no {text!r} within {timeout_s} s:\n{log.read_text()[-3000:]}")


@contextmanager
def standalone_cluster(work: Path, cores: int = 1, memory: str = "1g") -> Iterator[str]:
    """Starts the master and the workers, yields the master's URL, stops them."""
    home = Path(pyspark.__file__).parent
    base = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1")
    spark_class = str(home / "bin" / "spark-class")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    started: list[subprocess.Popen[bytes]] = []

    Process = subprocess.Popen[bytes]

    def start(name: str, args: list[str], env: dict[str, str]) -> tuple[Path, Process]:
        log = work / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [spark_class, *args], stdout=out, stderr=subprocess.STDOUT, env=env
            )
        started.append(process)
        return log, process

    try:
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        log, process = start("master", [*master, "--port", str(port), "--webui-port", "0"], base)
        _wait_for(log, "I have been elected leader", process, 60)
        # The workers start side by side (each JVM takes seconds to come up), then both must
        # have registered before the job starts.
        workers = []
        for i, host in enumerate(WORKER_HOSTS):
            args = ["org.apache.spark.deploy.worker.Worker", "--host", host, "--cores", str(cores)]
            args += ["--memory", memory, "--webui-port", "0", "--work-dir", str(work / f"w{i}")]
            env = dict(base, SPARK_LOCAL_HOSTNAME=host)
            workers.append(start(f"worker-{i}", [*args, url], env))
        for log, process in workers:
            _wait_for(log, "Successfully registered with master", process, 60)
        yield url
    finally:
        for process in reversed(started):
            process.terminate()
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
