"""A job under sparkprov's capture extension (io.sparkprov.capture.CaptureExtension), run in a
process of its own by tests/unit/test_capture_extension.py: ``spark.sql.extensions`` is read
when a session starts, and the test suite's session runs in one JVM per pytest process.

Each query runs three ways in one session: plain (``spark.sparkprov.capture=false``), captured by
the extension alone (SQL text, not a line of sparkprov's API), and captured by a
``ProvenanceSession``'s ``tracked`` (capture_agent.plan_capture, the reference) with the extension
off. Printed as JSON: per query, the rows of each, and per output row the labels of the source
rows its lineage reaches, read from the emitted graph; or the error the extension raised.

Usage: python -m tests.unit.extension_job JAR QUERIES.json OUT.json
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd

CAPTURE = "spark.sparkprov.capture"


ROOT = Path(__file__).resolve().parents[2]


def run_job(module: str, *args: str, out: Path, timeout_s: int) -> dict[str, Any]:
    """Job ``module`` run in a process of its own (the extension is read when a session
    starts), given the capture jar, ``args`` and ``out``; the JSON results it wrote there."""
    from capture_agent.jvm import ENV_JAR, jar_path

    jar = str(jar_path(os.environ.get(ENV_JAR, "")))
    done = subprocess.run(
        [sys.executable, "-m", module, jar, *args, str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} failed: {done.stderr[-4000:]}")
    results: dict[str, Any] = json.loads(out.read_text())
    return results


class RunMessages:
    """A run's memory sink (the extension's ``CaptureRun``), as bench.tpc_sql.oracle's graphs
    read an emitter."""

    def __init__(self, run: Any, start: int = 0, end: int | None = None) -> None:
        self._run = run
        self._slice = slice(start, end)  # one query's messages

    def messages(self) -> list[tuple[bytes, bytes]]:
        return [(b"", bytes(v)) for v in list(self._run.memory())[self._slice]]


def _tokens(nodes: dict[int, Any], graph: Any, node: int) -> list[str]:
    """The sorted labels of the TOKEN nodes ``node`` reaches back to (itself included)."""
    return sorted(
        _label(nodes[a]) for a in nx.ancestors(graph, node) | {node} if nodes[a]["op"] == "TOKEN"
    )


def _label(node: dict[str, Any]) -> str:
    """A TOKEN's relation and label; the one row of a query without FROM has no position worth
    comparing (each way scans it in a partition of its own choosing)."""
    if node["relation"] == "one_row":
        return "one_row"
    return f"{node['relation']}#{node['label']}"


def lineage(emitter: Any, relation: str) -> list[list[Any]]:
    """Per output row of ``relation``: its values, then the sorted labels of the TOKEN nodes it
    reaches back to; sorted."""
    from bench.tpc_sql.oracle import emitted_graph
    from sparkprov.events import ATTRIBUTE_PREFIX

    nodes, graph = emitted_graph(emitter)
    out = []
    for i, node in nodes.items():
        if node["relation"] != relation:
            continue
        values = {
            k[len(ATTRIBUTE_PREFIX) :]: v
            for k, v in node["props"].items()
            if k.startswith(ATTRIBUTE_PREFIX)
        }
        out.append([sorted(values.items()), _tokens(nodes, graph, i)])
    return sorted(out, key=repr)


def member_columns(emitter: Any) -> list[list[Any]]:
    """Per member block sent: its value_of, aggregates and number of value columns."""
    from sparkprov.v1 import lineage_pb2

    out: list[list[Any]] = []
    for _, value in emitter.messages():
        event = lineage_pb2.LineageEvent.FromString(value)
        if event.WhichOneof("body") == "batch":
            out += [[list(m.value_of), m.aggregates, len(m.values)] for m in event.batch.members]
    return out


def exclusions(emitter: Any) -> list[list[list[str]]]:
    """Per EXCLUDED node (a row an anti join dropped, which no output row reaches): the labels
    of the source rows the dropped row reaches back to, then those of its match (the parent
    whose id is the node's value); sorted."""
    from bench.tpc_sql.oracle import emitted_graph

    nodes, graph = emitted_graph(emitter)
    out = []
    for i, n in nodes.items():
        if n["op"] == "EXCLUDED":
            match = int(n["value"])
            dropped = [p for p in graph.predecessors(i) if p != match]
            out.append(
                [
                    sorted(t for p in dropped for t in _tokens(nodes, graph, p)),
                    _tokens(nodes, graph, match),
                ]
            )
    return sorted(out)


def read_once(label: str) -> str:
    """A TOKEN's label with a relation's second reading (``orders_2#orders_2#0.1``) named as its
    first: plan capture makes each reading of a view a source of its own, the extension one."""
    return re.sub(r"_\d+#", "#", label)


def shape(emitter: Any, relation: str, merge_reads: bool = False) -> dict[str, int]:
    """The ops of the nodes ``relation``'s rows reach back to (themselves included), counted, and
    the edges among them: the graph's shape, without its ids. With ``merge_reads``, the TOKENs
    of one row read twice (:func:`read_once`'s labels equal) are one node, and the edges they
    then share one edge, as the extension makes a relation read twice one source."""
    from bench.tpc_sql.oracle import emitted_graph

    nodes, graph = emitted_graph(emitter)
    if merge_reads:
        merged = {
            i: f"TOKEN:{read_once(_label(n))}" for i, n in nodes.items() if n["op"] == "TOKEN"
        }
        graph = nx.relabel_nodes(graph, merged)
        nodes = {merged.get(i, i): n for i, n in nodes.items()}
    reached: set[int] = set()
    for i, node in nodes.items():
        if node["relation"] == relation:
            reached |= nx.ancestors(graph, i) | {i}
    counts: dict[str, int] = {}
    for i in reached:
        op = nodes[i]["op"] if i in nodes else "MISSING"
        counts[op] = counts.get(op, 0) + 1
    counts["edges"] = graph.subgraph(reached).number_of_edges()
    return counts


def dataframe_calls(spark: Any) -> Any:
    """A query of DataFrame calls over a view, with no SQL text."""
    from pyspark.sql import functions as F

    orders, customers = spark.table("orders"), spark.table("customers")
    joined = orders.join(customers, orders.cust == customers.id).where(F.col("amount") > 2)
    return joined.groupBy("city").agg(F.max("amount").alias("top")).select("city", "top")


def checks(spark: Any, run: Any, queries: dict[str, str]) -> dict[str, Any]:
    """What placing alone does: explain() sends nothing; with the extension off, or under the
    local property sparkprov.skip, the plan has no capture point."""
    query = next(iter(queries.values()))
    sent = len(run.memory())
    explained = (
        spark.sql(query)
        ._jdf.queryExecution()
        .explainString(spark._jvm.org.apache.spark.sql.execution.ExplainMode.fromString("extended"))
    )
    out = {
        "explain_sends": len(run.memory()) - sent,
        "explained_taps": "sparkprov_tap" in explained,
    }
    spark.conf.set(CAPTURE, "false")
    out["off_taps"] = "sparkprov_tap" in _plan(spark.sql(query))
    spark.conf.set(CAPTURE, "true")
    spark.sparkContext.setLocalProperty("sparkprov.skip", "true")
    out["skipped_taps"] = "sparkprov_tap" in _plan(spark.sql(query))
    spark.sparkContext.setLocalProperty("sparkprov.skip", None)
    out["on_taps"] = "sparkprov_tap" in _plan(spark.sql(query))
    return out


def written(spark: Any, run: Any, path: str) -> dict[str, Any]:
    """A write's rows, named by the folder written to, and their lineage."""
    spark.sql("SELECT oid, amount FROM orders WHERE amount > 2").write.mode("overwrite").parquet(
        path
    )
    relation = str(run.lastResult())
    return {"relation": relation, "lineage": lineage(RunMessages(run), relation)}


def markers(run: Any) -> dict[str, Any]:
    """The run markers the sink received, decoded, and whether Python's encoders give the same
    bytes for the same fields."""
    from sparkprov.events import (
        RunComplete,
        RunStarted,
        decode,
        encode_run_complete,
        encode_run_started,
    )

    out: dict[str, Any] = {"started": [], "complete": []}
    for value in run.memory():
        raw = bytes(value)
        event = decode(raw)
        if isinstance(event, RunStarted):
            same = raw == encode_run_started(
                event.run_id, event.workflow, event.started_unix_ms, event.application_id
            )
            out["started"].append({"run_id": event.run_id, "same_bytes": same})
        elif isinstance(event, RunComplete):
            same = raw == encode_run_complete(
                event.run_id,
                event.workflow,
                event.node_count,
                event.edge_count,
                finished_unix_ms=event.finished_unix_ms,
                source_files=event.source_files,
            )
            out["sources"] = [
                {"relation": f.relation, "files": list(f.files), "masks": list(f.masks)}
                for f in event.source_files
            ]
            out["complete"].append(
                {
                    "run_id": event.run_id,
                    "counts": [event.node_count, event.edge_count],
                    "same_bytes": same,
                }
            )
    out["totals"] = list(run.totals())
    return out


def _plan(df: Any) -> str:
    return str(df._jdf.queryExecution().optimizedPlan().toString())


def _estimate(df: Any) -> int:
    """Spark's estimate of the bytes ``df``'s optimized plan returns (what its join planning
    reads of a subplan)."""
    return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))


def sp_twice(x: float | None) -> float | None:
    return None if x is None else 2.0 * x


def sp_tag(c: int) -> str:
    return f"c{c}"


def _udf_select(prov: Any, spark: Any) -> Any:
    """test_capture_extension.py's python_udf in DataFrame calls: a BLACK_BOX per row."""
    from pyspark.sql import functions as F

    twice, tag = F.udf(sp_twice, "double"), F.udf(sp_tag, "string")
    orders = prov.source(spark.table("orders"), "orders")
    return orders.where(F.col("amount") > 1).select(
        "oid", twice("amount").alias("twice"), tag("cust").alias("tag")
    )


def _udf_grouped(prov: Any, spark: Any) -> Any:
    """python_udf_grouped in DataFrame calls: the functions' rows, then their groups."""
    from pyspark.sql import functions as F

    twice, tag = F.udf(sp_twice, "double"), F.udf(sp_tag, "string")
    orders = prov.source(spark.table("orders"), "orders")
    rows = orders.select(tag("cust").alias("tag"), twice("amount").alias("t"))
    return rows.groupBy("tag").agg(F.sum("t").alias("s"))


def sp_halve(x: pd.Series) -> pd.Series:
    return x / 2


def _pandas_halve() -> Any:
    """``sp_halve`` as a scalar pandas UDF: Spark evaluates it in ArrowEvalPython."""
    from pyspark.sql.pandas.functions import pandas_udf

    return pandas_udf(sp_halve, "double")  # type: ignore[call-overload]


def _pandas_udf_select(prov: Any, spark: Any) -> Any:
    """test_capture_extension.py's pandas_udf in DataFrame calls."""
    from pyspark.sql import functions as F

    orders = prov.source(spark.table("orders"), "orders")
    return orders.where(F.col("amount") > 1).select("oid", _pandas_halve()("amount").alias("half"))


# The reference of a query calling Python UDFs, which plan capture refuses.
UDF_REFERENCES = {
    "python_udf": _udf_select,
    "python_udf_grouped": _udf_grouped,
    "pandas_udf": _pandas_udf_select,
}


def main(jar: str, queries_path: str, out_path: str) -> None:
    from capture_agent import ProvenanceSession
    from capture_agent.emitters import MemoryEmitter
    from examples.spark import local_spark

    spec = json.loads(Path(queries_path).read_text())
    spark = local_spark(
        "sparkprov-extension",
        conf={
            "spark.jars": jar,
            "spark.sql.extensions": "io.sparkprov.capture.CaptureExtension",
            "spark.sparkprov.sink": "memory",
            "spark.sparkprov.runId": "extension-test",
            "spark.sql.codegen.fallback": "false",
        },
    )
    for view, table in spec["views"].items():
        spark.createDataFrame(table["rows"], table["columns"]).createOrReplaceTempView(view)
    # Python UDFs for the queries that call them (Spark evaluates them in BatchEvalPython).
    spark.udf.register("sp_twice", sp_twice, "double")
    spark.udf.register("sp_tag", sp_tag, "string")
    spark.udf.register("sp_halve", _pandas_halve())  # a scalar pandas UDF: ArrowEvalPython
    spark.conf.set(CAPTURE, "false")
    for view, table in spec.get("parquet_views", {}).items():  # read back from parquet files
        folder = str(Path(out_path).parent / view)
        frame = spark.createDataFrame(table["rows"], table["columns"]).repartition(2)
        frame.write.mode("overwrite").parquet(folder)
        spark.read.parquet(folder).createOrReplaceTempView(view)
    spark.conf.set(CAPTURE, "true")
    jvm = spark._jvm
    run = jvm.io.sparkprov.capture.CaptureRun.of(spark._jsc.sc())
    results: dict[str, Any] = {"__checks__": checks(spark, run, spec["queries"])}
    built = {name: (lambda q=query: spark.sql(q)) for name, query in spec["queries"].items()}
    built["dataframe_calls"] = lambda: dataframe_calls(spark)
    confs: dict[str, dict[str, str]] = spec.get("confs", {})
    for name, query in built.items():
        for other in confs:  # a query's own settings (the last query's undone)
            for key in confs[other]:
                spark.conf.unset(key)
        for key, value in confs.get(name, {}).items():
            spark.conf.set(key, value)
        spark.conf.set(CAPTURE, "false")
        plain_df = query()
        plain = [list(r) for r in plain_df.collect()]
        plain_plan = plain_df._jdf.queryExecution().executedPlan().toString()
        plain_estimate = _estimate(query())
        spark.conf.set(CAPTURE, "true")
        before, start = run.totals(), len(run.memory())
        try:
            df = query()
            rows = [list(r) for r in df.collect()]
            plan = df._jdf.queryExecution().executedPlan().toString()
            estimate = _estimate(df)
        except Exception as e:  # the error the extension raised, for the test to read
            results[name] = {"error": str(e)}
            continue
        after, end = run.totals(), len(run.memory())
        result = str(run.lastResult())
        spark.conf.set(CAPTURE, "false")
        emitter = MemoryEmitter(spark)
        with ProvenanceSession(spark, f"reference-{name}", values="all", emitter=emitter) as prov:
            reference = UDF_REFERENCES.get(name.removesuffix("_layered"))
            if reference is not None:  # plan capture refuses Python UDFs: the DataFrame API's
                reference(prov, spark).named("Out").collect()
            else:
                prov.tracked(query()).named("Out").collect()
        spark.conf.set(CAPTURE, "true")
        results[name] = {
            "plain": plain,
            "rows": rows,
            "plan": plan,
            "plain_plan": plain_plan,
            "estimate": [plain_estimate, estimate],
            "emitted": [after[0] - before[0], after[1] - before[1]],
            "result": result,
            "reference": lineage(emitter, "Out"),
            "reference_shape": shape(emitter, "Out"),
            "reference_shape_read_once": shape(emitter, "Out", merge_reads=True),
            "reference_exclusions": exclusions(emitter),
            "exclusions": exclusions(RunMessages(run, start, end)),
            "member_columns": member_columns(RunMessages(run, start, end)),
        }
    results["__write__"] = written(spark, run, str(Path(out_path).parent / "big_orders.parquet"))
    run.finish()
    run.finish()  # once: the second call publishes nothing
    results["__markers__"] = markers(run)
    messages = RunMessages(run)
    for name, r in results.items():
        if not name.startswith("__") and "error" not in r:
            r["lineage"] = lineage(messages, r["result"])
            r["shape"] = shape(messages, r["result"])
    from bench.tpc_sql.oracle import emitted_graph

    nodes, graph = emitted_graph(messages)
    results["__totals__"] = {
        "counted": list(run.totals()),
        "emitted": [len(nodes), graph.number_of_edges()],
    }
    Path(out_path).write_text(json.dumps(results, default=str))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
