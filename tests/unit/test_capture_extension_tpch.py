"""TPC-H's 22 queries as SQL text under the capture extension (spark.sql.extensions) at SF 0.01,
with no line of sparkprov's API: each captured query gives the plain result, the emitted graph
holds exactly the nodes and edges the run counted and a node per output row, and Titian's oracle
holds on a sampled output row (re-running the text on only the row's witness gives the row
back). The job runs in a process of its own (tests/unit/extension_tpch_job.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.extension_job import run_job


@pytest.fixture(scope="module")
def tpch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("extension-tpch") / "out.json"
    return run_job("tests.unit.extension_tpch_job", "0.01", "1", out=out, timeout_s=1200)


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
