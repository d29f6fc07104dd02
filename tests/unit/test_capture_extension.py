"""Capture through ``spark.sql.extensions`` (io.sparkprov.capture.CaptureExtension): a session
started with the extension captures its queries, SQL text and DataFrame calls alike, with no
line of sparkprov's API in the job. The job runs in a process of its own
(tests/unit/extension_job.py: the extension is read when a session starts); each query runs
plain, under the extension, and under a ProvenanceSession's plan capture (the reference).

Checked per query: the captured result equals the plain one; every output row's lineage reaches
exactly the source rows the reference's does (by their labels, the positions, which both ways
number alike), and so does each row an anti join dropped (its EXCLUDED node); the run's counts
equal what the sink received. And: an operator the extension does not place yet fails the query
naming it; the capture points fuse into whole-stage codegen; explain() sends nothing; the kill
switch and the skip property leave the plan as it was.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from tests.unit.extension_job import read_once, run_job
from tests.unit.test_plan_capture import CUSTOMERS, ORDERS, QUERIES

CAPTURED = [
    "join_group_order",
    "left_join_limit",
    "group_keys_reordered",
    "empty_total",
    "self_join",
    "outputs_computed_from_keys",
    "distinct_union",
    "in_subquery",
    "not_exists",
    "rollup_with_grouping",
    "cube",
    "exists_under_or",
    "above_average",
    "scalar_in_select",
    "scalar_without_from",
    "scalar_one_row_at_run_time",
    "scalar_of_no_rows",
    "share_of_city",
    "rank_in_city",
    "top_per_customer",
    "running_sum",
    "running_range_with_peers",
]
FILE_SOURCE_JOINED = """
    SELECT c.city, SUM(f.amount) AS s FROM orders_files f JOIN customers c ON f.cust = c.id
    WHERE c.city = 'NY' GROUP BY c.city"""
EXTRA = {
    "aggregates_sharing_an_input": """
        SELECT c.city, SUM(o.amount) AS s, AVG(o.amount) AS a, COUNT(o.oid) AS n,
            MAX(o.amount) AS m FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.city""",
    "filter_project": "SELECT oid, amount * 2 AS twice FROM orders WHERE amount > 2",
    "distinct_keys": "SELECT DISTINCT city FROM customers",
    "full_outer": """
        SELECT c.name, o.oid FROM customers c FULL OUTER JOIN orders o ON o.cust = c.id""",
    "file_source": """
        SELECT c.city, MAX(f.amount) AS top FROM orders_files f JOIN customers c
        ON f.cust = c.id WHERE f.amount > 1.5 GROUP BY c.city""",
    # the same, its positions read through the _metadata struct (MetadataColumns off, CONFS)
    "file_source_through_the_struct": """
        SELECT c.city, MAX(f.amount) AS top FROM orders_files f JOIN customers c
        ON f.cust = c.id WHERE f.amount > 1.5 GROUP BY c.city""",
    "one_view_joined_in_two_branches": """
        SELECT o.oid, c.name FROM orders o JOIN customers c ON o.cust = c.id WHERE o.amount > 3
        UNION ALL
        SELECT o.oid, c.name FROM orders o JOIN customers c ON o.cust = c.id WHERE o.amount <= 3""",
    "union_all_of_a_view_with_itself": """
        SELECT oid, amount FROM orders UNION ALL SELECT oid, amount FROM orders""",
    "computed_on_aggregates": """
        SELECT cust, SUM(amount) / COUNT(*) AS mean, 0.5 * MAX(amount) AS half, cust + 1 AS next
        FROM orders GROUP BY cust""",
    "distinct_count": "SELECT city, COUNT(DISTINCT name) AS names FROM customers GROUP BY city",
    "distinct_aggregates_of_one_input": """
        SELECT COUNT(DISTINCT cust) AS custs, SUM(DISTINCT cust) AS total FROM orders""",
    # a distinct aggregate beside plain ones (TPC-DS q16, q28, q94, q95): an aggregation per
    # kind, joined on the keys (over files: both reads are one source, as plan capture's one)
    "distinct_beside_plain_files": """
        SELECT COUNT(DISTINCT cust) AS custs, SUM(amount) AS s, AVG(amount) AS a
        FROM orders_files""",
    "distinct_beside_plain_grouped_files": """
        SELECT cust, COUNT(DISTINCT amount) AS amounts, SUM(amount) AS s, MAX(oid) AS top
        FROM orders_files GROUP BY cust""",
    # window aggregates over whole partitions (TPC-DS q12, q20, q53, q63, q89, q98)
    "window_over_aggregates": """
        SELECT c.city, o.cust, SUM(o.amount) AS s,
               AVG(SUM(o.amount)) OVER (PARTITION BY c.city) AS city_mean
        FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.city, o.cust""",
    "window_over_everything": """
        SELECT oid, amount - AVG(amount) OVER () AS off, MAX(amount) OVER () AS top
        FROM orders""",
    # scalar subqueries over one table merged into one CTE (MergeScalarSubqueries): a WithCTE
    # until Spark's last optimizer batch, placed with each reference in place (TPC-DS q9)
    "scalar_subqueries_merged": """
        SELECT (SELECT SUM(amount) FROM orders WHERE amount > 1) AS total,
               (SELECT COUNT(*) FROM orders WHERE amount > 1) AS n""",
    # a scalar subquery over a file source (TPC-H q15's revenue view): its plan pruned and its
    # filter moved below the capture point as a query's own are (ExtraOptimizations.inSubqueries)
    "scalar_over_files": """
        SELECT oid, amount FROM orders
        WHERE amount > (SELECT AVG(amount) FROM orders_files WHERE cust = 1)""",
    # a file source joined with a third of its rows' partners: its capture point runs above
    # the join (SourceJoinsFirst), and with the rule's conf off (CONFS) below it, as before
    "file_source_joined": FILE_SOURCE_JOINED,
    "file_source_joined_every_row": FILE_SOURCE_JOINED,
    "file_source_joined_broadcast": FILE_SOURCE_JOINED,
    # a semi and an anti join whose right sides are past the broadcast threshold (CONFS): sort
    # merge joins streaming the left rows, a row's matches grouped as the join gives them
    "exists_sort_merge": """
        SELECT c.name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.cust = c.id)""",
    "not_exists_sort_merge": """
        SELECT c.name FROM customers c
        WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.cust = c.id AND o.amount > 5)""",
    # Python UDFs (registered by extension_job.py), evaluated by BatchEvalPython: a BLACK_BOX
    # per row, fed by its row, as a projection calling them gives in the DataFrame API
    "python_udf": """
        SELECT oid, sp_twice(amount) AS twice, sp_tag(cust) AS tag FROM orders WHERE amount > 1""",
    "python_udf_grouped": """
        SELECT sp_tag(cust) AS tag, SUM(sp_twice(amount)) AS s FROM orders GROUP BY sp_tag(cust)""",
    "pandas_udf": "SELECT oid, sp_halve(amount) AS half FROM orders WHERE amount > 1",
    # a limit right over a semi join may stop its pairs midway: paired and grouped back instead
    "exists_under_a_limit": """
        SELECT COUNT(*) AS n FROM (SELECT c.name FROM customers c
        WHERE EXISTS (SELECT 1 FROM orders o WHERE o.cust = c.id) LIMIT 100)""",
}
NO_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "-1"}
# The same queries with every capture point placed as before io.sparkprov.capture.FewerLayers
# (a filter over the id's projection, and a projection dropping the inputs' ids): the graph must
# not change, only the plan's layers.
LAYERED = {"spark.sparkprov.fewerLayers": "false"}
EXTRA |= {
    "join_group_order_layered": QUERIES["join_group_order"],
    "python_udf_grouped_layered": EXTRA["python_udf_grouped"],
}
CONFS = {
    "exists_sort_merge": NO_BROADCAST,
    "not_exists_sort_merge": NO_BROADCAST,
    "join_group_order_layered": LAYERED,
    "python_udf_grouped_layered": LAYERED,
    # shuffled: orders_files, the smaller side, is what Spark would broadcast
    "file_source_joined": NO_BROADCAST,
    "file_source_through_the_struct": {"spark.sparkprov.metadataColumns": "false"},
    "file_source_joined_every_row": {**NO_BROADCAST, "spark.sparkprov.sourceJoinsFirst": "false"},
}
# Files read twice in one query: one source under the extension (CaptureRun.fileSource), where
# plan capture makes the second read a source of its own (orders_files_2): checked on its own.
SAME_FILES = {
    "union_all_of_files_with_itself": """
        SELECT oid, amount FROM orders_files UNION ALL SELECT oid, amount FROM orders_files""",
}
REFUSED = {
    "moving_sum": "the plan operator Window over a running or sliding frame",
    "previous_amount": "the plan operator Window with lag",
    "running_over_running": "over the rows of another such window",
    # Spark rewrites this with an Expand and aggregates FILTERed by the copy (one per input)
    "two_distinct_inputs": "(DISTINCT or FILTER)",
}


REFUSED_TEXTS = {
    "moving_sum": "SELECT oid, SUM(amount) OVER (ORDER BY oid ROWS 1 PRECEDING) AS m FROM orders",
    "previous_amount": "SELECT oid, LAG(amount) OVER (PARTITION BY cust ORDER BY oid) FROM orders",
    # TPC-DS q51's shape: some nodes were sent twice, so refused until understood
    "running_over_running": """
        SELECT oid, MAX(run) OVER (PARTITION BY cust ORDER BY oid
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS top
        FROM (SELECT oid, cust, SUM(amount) OVER (PARTITION BY cust ORDER BY oid
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS run FROM orders)""",
}


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The job's results, run once for the module."""
    work = tmp_path_factory.mktemp("extension")
    queries = {name: QUERIES[name] for name in [*CAPTURED, *REFUSED] if name in QUERIES}
    queries |= EXTRA | SAME_FILES | REFUSED_TEXTS
    spec = {
        "views": {
            "orders": {"rows": ORDERS, "columns": ["oid", "cust", "amount"]},
            "customers": {"rows": CUSTOMERS, "columns": ["id", "name", "city"]},
        },
        "parquet_views": {"orders_files": {"rows": ORDERS, "columns": ["oid", "cust", "amount"]}},
        "queries": queries,
        "confs": CONFS,
    }
    (work / "queries.json").write_text(json.dumps(spec))
    return run_job(
        "tests.unit.extension_job", str(work / "queries.json"), out=work / "out.json", timeout_s=600
    )


def _dropped(exclusions: list[list[list[str]]]) -> list[list[str]]:
    """The rows an anti join dropped, without their matches: the match is the one with the
    smallest node id, and ids differ between two runs, so the reference may name another."""
    return sorted(dropped for dropped, _ in exclusions)


# An aggregation two references read (scalar subqueries Spark merged into one common table
# expression): the extension places it once, one capture point that Spark's exchange reuse runs
# once (TapPlacement's aggregationsPlaced), where plan capture rebuilds each reference and reads
# the view twice. The same rows are reached, each once where the reference reaches it twice.
READ_ONCE = {"scalar_subqueries_merged"}


def _once(lineage: list[Any]) -> list[Any]:
    """Each row's tokens once, the reference's second reading (``orders_2#orders_2#0.1``)
    named as the first."""
    return [[values, sorted({read_once(token) for token in tokens})] for values, tokens in lineage]


@pytest.mark.parametrize("name", [*CAPTURED, *EXTRA, "dataframe_calls"])
def test_a_query_under_the_extension_gives_the_plain_result_and_the_reference_lineage(
    job: dict[str, Any], name: str
) -> None:
    result = job[name]
    assert "error" not in result, result.get("error", "")[:2000]
    assert sorted(map(repr, result["rows"])) == sorted(map(repr, result["plain"]))
    assert len(result["lineage"]) == len(result["rows"])  # a named node per output row
    if name in READ_ONCE:
        assert result["lineage"] == _once(result["lineage"])  # each source row reached once
        assert result["lineage"] == _once(result["reference"])
        assert result["lineage"] != result["reference"]  # which reads the view twice
    else:  # a view read twice is one source, where the reference reads it as two
        assert result["lineage"] == _once(result["reference"])
    assert _dropped(result["exclusions"]) == _dropped(result["reference_exclusions"])
    if name != "empty_total":  # its one row aggregates no rows
        assert all(tokens for _, tokens in result["lineage"])
    nodes, edges = result["emitted"]
    assert nodes > len(result["rows"]) and edges > 0


# Where plan capture names a join's rows through a PLUS node each (its rebuilt projection could
# not carry the pending join past it), the extension names the TIMES nodes themselves, as a
# projection after a join does in the DataFrame API (docs/capture.md).
NAMED_DIRECTLY = {"self_join", "distinct_beside_plain_grouped_files"}


# A union of a view with itself: the extension reads the view as one source (TapPlacement's
# sameSource), so the sides hold the same nodes and the later side's rows get a PLUS each
# (Unions), as two reads of the same files do; the reference reads two sources.
UNION_OF_ONE_SOURCE = {"union_all_of_a_view_with_itself"}


@pytest.mark.parametrize("name", [*CAPTURED, *EXTRA, "dataframe_calls"])
def test_a_query_under_the_extension_emits_the_references_graph(
    job: dict[str, Any], name: str
) -> None:
    """The nodes the result reaches, counted by op, and the edges among them: equal to the
    reference's (so the members, tensors, values and aggregates meet as they do there)."""
    expected = dict(job[name]["reference_shape_read_once"])
    if name in UNION_OF_ONE_SOURCE:  # the later side's rows: a PLUS each, fed by its TOKEN
        expected["PLUS"] += len(ORDERS)
        expected["edges"] += len(ORDERS)
    if name in NAMED_DIRECTLY:
        plus = expected.pop("PLUS")
        expected["edges"] -= plus
    if name in READ_ONCE:
        # the aggregation's nodes and its rows' tokens once where the reference has them per
        # reading (but for the one row both have one of); the result's row a TIMES with each
        # reference's row in both
        expected = dict(job[name]["reference_shape"])
        shape = job[name]["shape"]
        assert shape.keys() == expected.keys()
        assert shape["TIMES"] == expected["TIMES"]
        twice = {op: 2 * shape[op] - expected[op] for op in shape if op not in ("edges", "TIMES")}
        assert set(twice.values()) <= {0, 1}, (shape, expected)
        assert shape["edges"] < expected["edges"]
        return
    assert job[name]["shape"] == expected
    assert "MISSING" not in job[name]["shape"]  # no edge names a node never sent


def test_aggregates_of_one_input_send_its_values_once(job: dict[str, Any]) -> None:
    """SUM, AVG and MAX of amount share one value column (MemberBlock.value_of); COUNT(oid)
    has its own. The graph is the reference's (the shape test above)."""
    sent = job["aggregates_sharing_an_input"]["member_columns"]
    assert sent and all(block == [[0, 0, 1, 0], 4, 2] for block in sent)
    for name in CAPTURED:  # where others share (their graphs: the shape test), consistently
        for value_of, aggregates, columns in job[name].get("member_columns", []):
            assert not value_of or (len(value_of), max(value_of) + 1) == (aggregates, columns)


def test_a_file_sources_capture_point_keeps_only_the_columns_the_query_reads(
    job: dict[str, Any],
) -> None:
    """The values policy "read" (ValuesPruning) under the extension: the query reads cust and
    amount of orders_files, so its capture point keeps those two, and the scan reads no oid."""
    plan = job["file_source"]["plan"].split("== Initial Plan ==")[0]
    (tap,) = {
        line.split("sparkprov_tap_source:orders_files", 1)[1]
        for line in plan.splitlines()
        if "sparkprov_tap_source:orders_files" in line
    }
    assert "cust#" in tap and "amount#" in tap
    assert "oid#" not in tap, tap
    scans = [line for line in plan.splitlines() if "FileScan" in line and "orders_files" in line]
    assert scans and all("oid" not in line.split("ReadSchema:")[1] for line in scans), scans


def test_a_subquerys_file_source_keeps_the_columns_it_reads_and_runs_its_filter_first(
    job: dict[str, Any],
) -> None:
    """A source read inside a scalar subquery is captured as one read by the query itself: its
    capture point keeps the columns the subquery reads (not oid), and the subquery's filter runs
    in the scan, before the capture point, so the rows it drops are neither read nor sent."""
    plan = job["scalar_over_files"]["plan"].split("== Initial Plan ==")[0]
    taps = [
        line.split("sparkprov_tap_source:orders_files", 1)[1]
        for line in plan.splitlines()
        if "sparkprov_tap_source:orders_files" in line
    ]
    assert taps and all("amount#" in t and "cust#" in t and "oid#" not in t for t in taps), taps
    scans = [line for line in plan.splitlines() if "FileScan" in line and "orders_files" in line]
    assert scans, plan
    for scan in scans:
        assert "oid" not in scan.split("ReadSchema:")[1], scan
        assert "cust" in scan.split("DataFilters: [")[1].split("]")[0], scan


@pytest.mark.parametrize(
    ("name", "above"),
    [
        ("file_source_joined", True),
        ("file_source_joined_every_row", False),
        ("file_source_joined_broadcast", False),
    ],
)
def test_a_file_sources_capture_point_runs_above_the_join_its_rows_meet_first(
    job: dict[str, Any], name: str, above: bool
) -> None:
    """SourceJoinsFirst under the extension: orders_files' capture point runs above its join
    with the customers of NY, so the orders without such a customer (3 of 6) are not sent; with
    the rule's conf off it runs below the join, over every row the scan reads. Where Spark
    broadcasts orders_files (its estimate is the smaller side's), the capture point stays below
    the join too: every task of the other side meets a broadcast side's rows. The lineage is the
    reference's every way (the test above)."""
    plan = job[name]["plan"].split("== Initial Plan ==")[0].splitlines()
    (tap,) = [i for i, line in enumerate(plan) if "sparkprov_tap_source:orders_files" in line]
    (join,) = [i for i, line in enumerate(plan) if "Join" in line and "Exchange" not in line]
    assert (tap < join) == above, "\n".join(plan)  # a plan prints its parents first


SEMI_AND_ANTI = ["in_subquery", "not_exists", "exists_under_or", "exists_under_a_limit"]


@pytest.mark.parametrize("name", SEMI_AND_ANTI)
def test_a_captured_semi_or_anti_join_is_estimated_as_the_join_it_stands_for(
    job: dict[str, Any], name: str
) -> None:
    """The capture rebuilds a semi or anti join as a join of the left rows to their matches,
    whose size Spark would estimate as the product of both sides (SizedAsSemiJoin): the joins
    above would then shuffle and sort what plain Spark broadcasts. Captured, the query's
    estimate stays within a few times plain's (the ids' columns), not a product."""
    plain, captured = job[name]["estimate"]
    assert captured <= 8 * plain, (plain, captured)


def test_a_file_sources_rows_are_labelled_by_file_and_row_index(job: dict[str, Any]) -> None:
    """Parquet rows are labelled <relation>#<file>.<row> (their file's ordinal among the scan's
    sorted files), as plan capture labels them: the same rows in every run over the files."""
    labels = {t for _, tokens in job["file_source"]["lineage"] for t in tokens}
    files = {t for t in labels if t.startswith("orders_files#")}
    assert files and {t.split("#")[-1].split(".")[0] for t in files} <= {"0", "1"}
    assert job["file_source"]["lineage"] == job["file_source"]["reference"]
    (listed,) = [s for s in job["__markers__"]["sources"] if s["relation"] == "orders_files"]
    assert len(listed["files"]) == 2 and listed["files"] == sorted(listed["files"])
    assert len(listed["masks"]) == 1


def _positions_read(plan: str) -> list[str]:
    """What each source position in the final plan reads its file from."""
    final = plan.split("== Initial Plan ==")[0]
    return re.findall(r"sparkprov_source_position\(([^,]+),", final)


def test_a_file_sources_positions_read_the_scans_columns_not_the_metadata_struct(
    job: dict[str, Any],
) -> None:
    """Spark rebuilds a parquet row's _metadata struct from the scan's flat columns for every
    row that reads a field of it; the capture points read the flat columns instead
    (io.sparkprov.capture.MetadataColumns), with the same rows and lineage as through the
    struct (its switch off)."""
    direct = job["file_source"]
    through = job["file_source_through_the_struct"]
    assert "error" not in through, through.get("error", "")[:2000]
    read = _positions_read(direct["plan"])
    assert read and not any("_metadata" in r for r in read), direct["plan"]
    read_off = _positions_read(through["plan"])
    assert read_off and all("_metadata" in r for r in read_off), through["plan"]
    # No ORDER BY: the rows in any order (AQE coalesces the two plans' shuffles apart).
    assert sorted(map(repr, direct["rows"])) == sorted(map(repr, through["rows"]))
    assert sorted(map(repr, direct["rows"])) == sorted(map(repr, direct["plain"]))
    assert direct["lineage"] == through["lineage"] == direct["reference"]


def test_files_read_twice_are_one_source_and_the_second_reads_rows_are_rows_of_their_own(
    job: dict[str, Any],
) -> None:
    """Each order is two result rows; both reach the order's one TOKEN (labelled by its file and
    row, under one relation), the second through a PLUS of its own (Unions): two rows of the
    graph as of the result, over the same source row."""
    result = job["union_all_of_files_with_itself"]
    assert "error" not in result, result.get("error", "")[:2000]
    assert sorted(map(repr, result["rows"])) == sorted(map(repr, result["plain"]))
    assert len(result["rows"]) == 2 * len(ORDERS)
    tokens = [t for _, reached in result["lineage"] for t in reached]
    assert len(tokens) == len(result["rows"])  # each row its one order
    assert set(Counter(tokens).values()) == {2}
    assert all(t.startswith("orders_files#orders_files#") for t in tokens)
    reference = [
        t.replace("orders_files_2", "orders_files") for _, r in result["reference"] for t in r
    ]
    assert sorted(tokens) == sorted(reference)
    # one TOKEN per order; a named PLUS per result row and one more per second-read row
    assert result["shape"]["TOKEN"] == len(ORDERS)
    assert result["shape"]["PLUS"] == 3 * len(ORDERS)


def test_a_view_read_again_in_a_query_is_one_source_whose_exchanges_spark_reuses(
    job: dict[str, Any],
) -> None:
    """Both branches join the same customers: one source (TapPlacement's sameSource) with one
    capture point, so the branches' exchanges of its rows stay equal and Spark reuses them as
    it does in the plain plan, instead of computing, tapping and sending the rows again."""
    result = job["one_view_joined_in_two_branches"]
    assert "error" not in result, result.get("error", "")[:2000]
    reused = result["plain_plan"].count("ReusedExchange")
    assert reused > 0, result["plain_plan"]
    assert result["plan"].count("ReusedExchange") == reused, result["plan"]
    tokens = {t.split("#")[0] for _, reached in result["lineage"] for t in reached}
    assert tokens == {"orders", "customers"}


def test_an_anti_join_records_each_row_it_dropped_with_a_match(job: dict[str, Any]) -> None:
    exclusions = job["not_exists"]["exclusions"]
    assert exclusions  # customers with orders
    for dropped, match in exclusions:
        assert [t.split("#")[0] for t in dropped] == ["customers"]
        assert [t.split("#")[0] for t in match] == ["orders"]


@pytest.mark.parametrize(
    ("name", "joins"),
    [
        ("in_subquery", ("BroadcastHashJoin", "SortMergeJoin")),  # Spark's choice
        ("not_exists", ("BroadcastHashJoin", "SortMergeJoin")),
        ("exists_under_or", ("BroadcastHashJoin", "SortMergeJoin")),  # an existence join
        ("exists_sort_merge", ("SortMergeJoin",)),
        ("not_exists_sort_merge", ("SortMergeJoin",)),
    ],
)
def test_a_semi_or_anti_joins_matches_are_grouped_where_the_join_makes_them(
    job: dict[str, Any], name: str, joins: tuple[str, ...]
) -> None:
    """The left rows joined left outer by a join that streams them, and no shuffle and
    aggregation of the pairs after (io.sparkprov.capture.SemiJoins): the join's pairs pass
    through the capture point, which keeps a row's first and records the row at its last."""
    plan = job[name]["plan"].split("== Initial Plan ==")[0]
    outer = [line for line in plan.splitlines() if "LeftOuter" in line]
    assert len(outer) == 1 and any(f"{j} " in outer[0] for j in joins), plan
    assert "BuildLeft" not in outer[0]
    assert "collect_list" not in plan and "min(__sp_id" not in plan, plan


def test_a_semi_join_under_a_limit_has_its_matches_grouped_by_a_shuffle(
    job: dict[str, Any],
) -> None:
    """A limit may stop a left row's pairs before its last: they are grouped back by row, as
    plan capture groups them, and the witnesses are whole."""
    assert "collect_list" in job["exists_under_a_limit"]["plan"]


def test_the_runs_counts_equal_what_its_sink_received(job: dict[str, Any]) -> None:
    totals = job["__totals__"]
    assert totals["counted"] == totals["emitted"]
    assert totals["counted"][0] > 0


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_an_operator_not_placed_fails_the_query_naming_it(job: dict[str, Any], name: str) -> None:
    error = job[name].get("error", "")
    assert "UnsupportedPlan" in error and REFUSED[name] in error
    assert "spark.sparkprov.capture=false" in error  # and how to run it without provenance


def test_python_and_pandas_udfs_are_placed_where_spark_evaluates_them(
    job: dict[str, Any],
) -> None:
    """The UDF queries above ran through the nodes that evaluate Python functions (their
    lineage and shape are checked with the other queries)."""
    assert "BatchEvalPython" in job["python_udf"]["plan"]
    # two nodes (the grouping key's function apart), one BLACK_BOX (the shape test)
    final = job["python_udf_grouped"]["plan"].split("== Initial Plan ==")[0]
    assert final.count("BatchEvalPython") == 2
    assert "ArrowEvalPython" in job["pandas_udf"]["plan"]


def test_capture_points_fuse_into_whole_stage_codegen(job: dict[str, Any]) -> None:
    plan = job["join_group_order"]["plan"]
    taps = [line for line in plan.splitlines() if "sparkprov_tap" in line]
    assert len(taps) >= 5  # two sources, the join, the members, the groups, the named rows
    final = plan.split("== Initial Plan ==")[0]
    assert all("*(" in line for line in final.splitlines() if "sparkprov_tap" in line)


def _layers(plan: str) -> Counter[str]:
    """The executed plan's projections and filters, and the taps each kind holds."""
    final = plan.split("== Initial Plan ==")[0]
    out: Counter[str] = Counter()
    for line in final.splitlines():
        node = line.lstrip(" :+-*()0123456789")
        for kind in ("Project", "Filter"):
            if node.startswith(kind + " "):
                out[kind] += 1
                out[f"{kind} taps"] += node.count("sparkprov_tap")
    return out


@pytest.mark.parametrize("name", ["join_group_order", "python_udf_grouped"])
def test_taps_that_yield_their_rows_ids_make_fewer_layers_and_the_same_graph(
    job: dict[str, Any], name: str
) -> None:
    """FewerLayers: a join's, a group's, its members' and a Python function's rows are captured
    by the projection that computes their ids, where a filter and two projections were; the
    graph is the one the layered plan gives."""
    fewer, layered = job[name], job[f"{name}_layered"]
    assert fewer["lineage"] == layered["lineage"]
    assert fewer["shape"] == layered["shape"]
    assert fewer["emitted"] == layered["emitted"]
    few, many = _layers(fewer["plan"]), _layers(layered["plan"])
    # taps in projections now: all but the sources' and the named rows' (filters, as before)
    assert many["Project taps"] == 0 and few["Project taps"] >= 1
    assert few["Filter taps"] == 2 if name == "python_udf_grouped" else 3
    assert few["Project"] + few["Filter"] < many["Project"] + many["Filter"] - 2


def test_explain_sends_nothing_and_the_switches_leave_the_plan_alone(
    job: dict[str, Any],
) -> None:
    checks = job["__checks__"]
    assert checks["explained_taps"] and checks["explain_sends"] == 0
    assert checks["on_taps"]
    assert not checks["off_taps"]  # spark.sparkprov.capture=false
    assert not checks["skipped_taps"]  # the local property sparkprov.skip


def test_a_write_names_its_rows_by_the_folder_written_to(job: dict[str, Any]) -> None:
    write = job["__write__"]
    assert write["relation"] == "big_orders"
    kept = {str(o[0]): i for i, o in enumerate(ORDERS) if o[2] > 2}
    assert sorted(dict(values)["oid"] for values, _ in write["lineage"]) == sorted(kept)
    assert all(len(tokens) == 1 for _, tokens in write["lineage"])  # each row its one order


def test_the_run_is_marked_started_and_complete_once_as_python_encodes_markers(
    job: dict[str, Any],
) -> None:
    markers = job["__markers__"]
    assert [m["run_id"] for m in markers["started"]] == ["extension-test"]
    assert len(markers["complete"]) == 1  # finish() twice: one marker
    (complete,) = markers["complete"]
    assert complete["counts"] == markers["totals"] == job["__totals__"]["emitted"]
    assert complete["same_bytes"] and markers["started"][0]["same_bytes"]
