"""The package as a new user installs it: ``python -m build`` makes an sdist and a wheel (the
stubs generated at build time, the capture jar and the viewer's libraries inside); in a fresh
virtual environment outside the repository, ``pip install <wheel>`` gives a working ``sparkprov``
command and a job captured with the installed package lands in the stack, node by node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from sparkprov import defaults
from tests.integration.graph import own_nodes, run_graph

ROOT = Path(__file__).resolve().parents[2]

JOB = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession, functions as F
    from capture_agent import ProvenanceSession

    spark = (SparkSession.builder.master("local[2]").appName("installed")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    people = spark.createDataFrame(
        [(i, "ab"[i % 2], 20 + i % 7) for i in range(40)], ["id", "city", "age"])
    with ProvenanceSession(spark, workflow="installed") as prov:
        rows = (prov.source(people, "People").filter(F.col("age") >= 22)
                .groupBy("city").agg(F.sum("age").alias("ages")).named("Ages").collect())
    spark.stop()
    print(json.dumps({"run_id": prov.run_id, "groups": len(rows)}))
    """
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment outside the repository with the built wheel installed."""
    base = tmp_path_factory.mktemp("install")
    dist = base / "dist"
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheels = list(dist.glob("sparkprov-*.whl"))
    assert len(wheels) == 1 and list(dist.glob("sparkprov-*.tar.gz"))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # --no-compile: pip byte-compiles every module of every dependency (pyspark, pandas, ...)
    # otherwise (21 s of its 40 s here); Python compiles what a test imports when it imports it.
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(wheels[0])],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"built and installed in {time.monotonic() - started:.1f} s")
    return venv


def test_the_wheel_carries_the_stubs_the_jar_and_the_viewer(installed: Path) -> None:
    wheel = next((installed.parent / "dist").glob("sparkprov-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "sparkprov/v1/lineage_pb2.py",
        "sparkprov/v1/query_pb2_grpc.py",
        "sparkprov/schema.cypher",  # ingest's ensure_schema reads it (sparkprov.schema)
        "capture_agent/jars/sparkprov-capture.jar",
        "viewer/static/vendor/cytoscape.min.js",
    } <= names
    assert not any(n.startswith(("tests/", "bench/", "examples/")) for n in names)


def test_sparkprov_help_works_outside_the_repository(installed: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(installed / "bin" / "sparkprov"), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert "Row-level provenance" in done.stdout


def test_a_job_captured_with_the_installed_package_is_stored(  # type: ignore[no-untyped-def]
    installed: Path, tmp_path: Path, stack, client, neo4j_driver
) -> None:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    python = installed / "bin" / "python"
    env = {
        "PATH": f"{installed / 'bin'}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "PYSPARK_PYTHON": str(python),
        "SPARK_LOCAL_IP": "127.0.0.1",
        defaults.ENV_KAFKA_BOOTSTRAP: stack.settings.kafka_bootstrap,
    }
    done = subprocess.run(
        [str(python), str(script)], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # the package imported is the installed one, not the checkout's
    where = subprocess.run(
        [str(python), "-c", "import capture_agent; print(capture_agent.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert where.stdout.startswith(str(installed)), where.stdout

    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["groups"] == 2
    run = client.wait_for_run(report["run_id"], timeout_s=120)
    graph = run_graph(neo4j_driver, report["run_id"])
    ops = [d["op"] for _, d in graph.nodes(data=True) if d.get("op")]
    # 40 source tokens, the 2 groups' DELTA rows and their SUM aggregates
    assert ops.count("TOKEN") == 40 and ops.count("DELTA") == 2 and ops.count("AGGREGATE") == 2
    assert own_nodes(graph) == run.node_count
