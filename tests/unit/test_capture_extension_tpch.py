"""TPC-H's 22 queries as SQL text under the capture extension (spark.sql.extensions) at SF 0.01,
with no line of sparkprov's API: each captured query gives the plain result, the emitted graph
holds exactly the nodes and edges the run counted and a node per output row, and Titian's oracle
holds on a sampled output row (re-running the text on only the row's witness gives the row
back). The job runs in a process of its own (tests/unit/extension_tpch_job.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from capture_agent.jvm import ENV_JAR, jar_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tpch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("extension-tpch") / "out.json"
    jar = str(jar_path(os.environ.get(ENV_JAR, "")))
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.extension_tpch_job", jar, "0.01", "1", str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results: dict[str, Any] = json.loads(out.read_text())
    return results


@pytest.mark.parametrize("number", range(1, 23))
def test_tpch_query_under_the_extension_is_captured_with_the_oracle(
    tpch: dict[str, Any], number: int
) -> None:
    result = tpch[str(number)]
    assert "error" not in result, result.get("error")
    assert result["equal"]
    assert result["counted"] == result["emitted"]
    assert result["outputs"] == result["rows"] > 0
    assert result["oracle"] == [True]
