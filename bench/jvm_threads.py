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
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "ThreadCpu", "kind_of", "process_cpu"]

# Thread names as the JVM, Spark and Kafka's client give them, by what they do.
_KINDS = (
    ("tasks", re.compile(r"^Executor task")),
    ("jit", re.compile(r"^C[12] CompilerThre|^Sweeper thread")),
    ("gc", re.compile(r"^G1 |^GC Thread|^VM Thread")),
    ("kafka_producer", re.compile(r"^kafka-producer")),
)
KINDS = (*(name for name, _ in _KINDS), "other")
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

    def snapshot(self) -> Counter[str]:
        # A thread that ended between two snapshots takes its CPU with it: Spark's task
        # threads are pooled and the JVM's compiler threads live long, so little is lost.
        spent: Counter[str] = Counter()
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                name, cpu = _cpu_of_stat((task / "stat").read_text())
            except (OSError, ValueError):
                continue
            spent[kind_of(name)] += cpu
        if self.broker_pid is not None:
            try:
                spent["broker"] = process_cpu(self.broker_pid)
            except OSError:
                self.broker_pid = None
        return spent

    def since(self, before: Counter[str]) -> dict[str, float]:
        """CPU seconds per kind spent since ``before`` (a snapshot)."""
        now = self.snapshot()
        return {k: round(now[k] - before.get(k, 0.0), 3) for k in now}
