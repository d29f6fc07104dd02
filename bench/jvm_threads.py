"""CPU seconds of a process's threads, by kind, read from /proc: where a run's time went.

On a 2-core machine the tasks share the cores with the JVM's own threads. A captured run makes
HotSpot compile more code (the capture's rules, taps and encoders, Kafka's client) and keeps the
producer's I/O thread and the broker busy; both take cores from the tasks. Wall time alone
cannot tell that from the tasks' own work, these counters can (bench/README.md, "Where a run's
CPU goes, by thread").

    cpu = ThreadCpu.of_spark(spark)        # the driver JVM, which runs local[N]'s executors
    before = cpu.snapshot()
    ...
    spent = cpu.since(before)  # {"tasks": 0.41, "jit": 0.22, ..., "broker": 0.03}
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "Snapshot", "ThreadCpu", "kind_of", "process_cpu"]

# Thread names as the JVM, Spark and Kafka's client give them, by what they do.
_KINDS = (
    ("tasks", re.compile(r"^Executor task")),
    ("jit", re.compile(r"^C[12] CompilerThre|^Sweeper thread")),
    ("gc", re.compile(r"^G1 |^GC Thread|^VM Thread")),
    ("kafka_producer", re.compile(r"^kafka-producer")),
)
KINDS = (*(name for name, _ in _KINDS), "other", "ended")
_TICK = os.sysconf("SC_CLK_TCK")


def kind_of(thread: str) -> str:
    """The kind (one of KINDS) of a thread by its name as /proc shows it (15 characters)."""
    return next((k for k, pattern in _KINDS if pattern.search(thread)), "other")


def _cpu_of_stat(stat: str) -> tuple[str, float]:
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    return name, (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


def process_cpu(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (all its threads)."""
    return _cpu_of_stat(Path(f"/proc/{pid}/stat").read_text())[1]


class ThreadCpu:
    """The threads of one process, summed by kind (KINDS), plus one more process (the broker)."""

    def __init__(self, pid: int, broker_pid: int | None = None) -> None:
        self.pid = pid
        self.broker_pid = broker_pid

    @classmethod
    def of_spark(cls, spark: Any, broker_pid: int | None = None) -> ThreadCpu:
        """The JVM behind a local SparkSession (py4j's gateway process)."""
        pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        return cls(pid, broker_pid)

    def snapshot(self) -> Snapshot:
        """Each live thread's CPU by thread id, and the whole process's (which keeps the CPU of
        threads that ended)."""
        threads: dict[str, tuple[str, float]] = {}
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                name, cpu = _cpu_of_stat((task / "stat").read_text())
            except (OSError, ValueError):
                continue
            threads[task.name] = (kind_of(name), cpu)
        broker = None
        if self.broker_pid is not None:
            try:
                broker = process_cpu(self.broker_pid)
            except OSError:
                self.broker_pid = None
        return Snapshot(threads, process_cpu(self.pid), broker)

    def since(self, before: Snapshot) -> dict[str, float]:
        """CPU seconds per kind spent since ``before``. A thread alive at both snapshots counts
        its difference, one born since then all of its CPU; what the process spent beyond them
        went to threads that ended in between (Spark's idle task threads, pooled, end after a
        minute), reported as "ended" so that no kind goes negative."""
        now = self.snapshot()
        spent: Counter[str] = Counter()
        for tid, (kind, cpu) in now.threads.items():
            spent[kind] += cpu - before.threads.get(tid, (kind, 0.0))[1]
        ended = (now.process - before.process) - sum(spent.values())
        if ended > 0.0:
            spent["ended"] += ended
        if now.broker is not None and before.broker is not None:
            spent["broker"] = now.broker - before.broker
        return {k: round(v, 3) for k, v in spent.items()}


@dataclass(frozen=True)
class Snapshot:
    """A process's threads (id: kind and CPU seconds), its own CPU and the broker's."""

    threads: dict[str, tuple[str, float]]
    process: float
    broker: float | None
