"""bench.jvm_threads: threads told apart by name, and CPU read from /proc."""

from __future__ import annotations

import os
import threading
import time

from bench.jvm_threads import ThreadCpu, kind_of


def test_threads_are_told_apart_by_their_names_as_proc_shows_them() -> None:
    # /proc cuts a thread's name at 15 characters.
    assert kind_of("Executor task l") == "tasks"
    assert kind_of("C2 CompilerThre") == "jit"
    assert kind_of("C1 CompilerThre") == "jit"
    assert kind_of("G1 Conc#0") == "gc"
    assert kind_of("GC Thread#1") == "gc"
    assert kind_of("kafka-producer-") == "kafka_producer"
    assert kind_of("dag-scheduler-e") == "other"


def test_the_cpu_a_busy_thread_spends_is_counted_since_the_snapshot() -> None:
    cpu = ThreadCpu(os.getpid(), broker_pid=os.getpid())
    before = cpu.snapshot()

    spun, done = threading.Event(), threading.Event()

    def spin() -> None:
        end = time.thread_time() + 0.3
        while time.thread_time() < end:
            pass
        spun.set()
        done.wait()  # alive while counted: an ended thread's CPU leaves /proc with it

    worker = threading.Thread(target=spin)
    worker.start()
    spun.wait()
    spent = cpu.since(before)
    done.set()
    worker.join()
    assert spent["other"] >= 0.2  # this process's threads are none of the JVM's kinds
    assert spent["broker"] >= 0.2  # the "broker" here is this process as a whole
    assert "tasks" not in spent


def test_a_thread_that_ends_between_snapshots_is_counted_as_ended() -> None:
    cpu = ThreadCpu(os.getpid())
    before = cpu.snapshot()

    def spin() -> None:
        end = time.thread_time() + 0.3
        while time.thread_time() < end:
            pass

    worker = threading.Thread(target=spin)
    worker.start()
    worker.join()  # gone from /proc before the second snapshot
    spent = cpu.since(before)
    assert spent["ended"] >= 0.2
    assert all(v >= 0 for v in spent.values())
