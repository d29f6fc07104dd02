"""Capture from the plan (capture_agent.plan_capture): SQL text over views, rebuilt with the
tracked operators. Results equal the plain query's; each output row's lineage reaches exactly
the input rows that made it; what cannot be rebuilt is refused by name.

Its sessions keep every source column (values="all"): the tests find source rows by values
the queries need not read.
"""

from __future__ import annotations

import networkx as nx
import pytest

from bench.tpc_sql.oracle import emitted_graph
from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter
from capture_agent.errors import UnsupportedOperation
from capture_agent.passthrough import PlainFrame
from sparkprov.events import ATTRIBUTE_PREFIX

ORDERS = [(1, 10, 5.0), (2, 10, 7.5), (3, 20, 1.0), (4, 30, 9.0), (5, 20, 4.0), (6, 40, 2.0)]
CUSTOMERS = [(10, "ann", "NY"), (20, "bo", "LA"), (30, "cy", "NY"), (50, "di", "SF")]

QUERIES = {
    "join_group_order": """
        SELECT c.city, SUM(o.amount) AS total, COUNT(*) AS n
        FROM orders o JOIN customers c ON o.cust = c.id
        WHERE o.amount > 1.5 GROUP BY c.city ORDER BY total DESC""",
    "in_subquery": """
        SELECT * FROM orders WHERE cust IN (SELECT id FROM customers WHERE city = 'NY')""",
    "not_exists": """
        SELECT c.name FROM customers c
        WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.cust = c.id)""",
    "left_join_limit": """
        SELECT c.name, o.amount FROM customers c LEFT JOIN orders o ON o.cust = c.id
        ORDER BY c.name, o.amount LIMIT 4""",
    "distinct_union": "SELECT city FROM customers UNION SELECT 'XX' AS city FROM orders",
    "group_keys_reordered": "SELECT city, name FROM customers GROUP BY name, city",
    "rank_in_city": """
        SELECT c.city, o.oid, RANK() OVER (PARTITION BY c.city ORDER BY o.amount DESC) AS r
        FROM orders o JOIN customers c ON o.cust = c.id""",
    "share_of_city": """
        SELECT o.oid, o.amount / SUM(o.amount) OVER (PARTITION BY o.cust) AS share
        FROM orders o""",
    "top_per_customer": """
        SELECT * FROM (
          SELECT oid, cust, RANK() OVER (PARTITION BY cust ORDER BY amount DESC) AS r FROM orders
        ) WHERE r <= 1""",
    "empty_total": "SELECT SUM(amount) AS total, COUNT(*) AS n FROM orders WHERE amount > 100",
    "self_join": """
        SELECT a.oid, b.oid AS other FROM orders a JOIN orders b
        ON a.cust = b.cust AND a.oid < b.oid""",
    "above_average": "SELECT * FROM orders WHERE amount > (SELECT AVG(amount) FROM orders)",
    "scalar_in_select": """
        SELECT oid, amount - (SELECT MIN(amount) FROM orders) AS over_min FROM orders""",
    "scalar_without_from": "SELECT (SELECT MAX(amount) FROM orders) AS top, 1 AS one",
    "scalar_one_row_at_run_time": """
        SELECT * FROM customers WHERE id = (SELECT DISTINCT cust FROM orders WHERE oid = 4)""",
    "scalar_of_no_rows": """
        SELECT oid, (SELECT DISTINCT cust FROM orders WHERE oid > 99) AS none FROM orders""",
    "rollup_with_grouping": """
        SELECT city, name, COUNT(*) AS n, GROUPING(name) AS g
        FROM customers GROUP BY ROLLUP(city, name)""",
    "cube": "SELECT cust, COUNT(*) AS n, SUM(amount) AS s FROM orders GROUP BY CUBE(cust)",
    "distinct_beside_plain": """
        SELECT cust, COUNT(DISTINCT amount > 3) AS kinds, SUM(amount) AS s
        FROM orders GROUP BY cust""",
    "distinct_beside_plain_whole": """
        SELECT COUNT(DISTINCT cust) AS custs, SUM(amount) AS s, AVG(amount) AS a FROM orders""",
    "two_distinct_inputs": """
        SELECT COUNT(DISTINCT cust) AS custs, COUNT(DISTINCT amount) AS amounts FROM orders""",
    "exists_under_or": """
        SELECT c.name FROM customers c
        WHERE EXISTS (SELECT 1 FROM orders o WHERE o.cust = c.id AND o.amount > 5)
           OR c.city = 'SF'""",
    "running_sum": """
        SELECT oid, cust, SUM(amount) OVER (PARTITION BY cust ORDER BY oid
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS run,
          MAX(amount) OVER (PARTITION BY cust ORDER BY oid
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS top
        FROM orders""",
    "running_range_with_peers": """
        SELECT oid, SUM(amount) OVER (ORDER BY cust DESC) AS upto FROM orders""",
    "outputs_computed_from_keys": """
        SELECT upper(city) AS c, COUNT(*) AS n, 'x' AS tag FROM customers GROUP BY city""",
    "full_join_of_same_names": """
        WITH s AS (SELECT cust FROM orders GROUP BY cust), t AS (SELECT id AS cust FROM customers)
        SELECT SUM(CASE WHEN s.cust IS NOT NULL AND t.cust IS NULL THEN 1 ELSE 0 END) AS only_s,
               SUM(CASE WHEN s.cust IS NULL AND t.cust IS NOT NULL THEN 1 ELSE 0 END) AS only_t
        FROM s FULL OUTER JOIN t ON s.cust = t.cust""",
}


@pytest.fixture
def views(spark):  # type: ignore[no-untyped-def]
    spark.createDataFrame(ORDERS, ["oid", "cust", "amount"]).createOrReplaceTempView("orders")
    spark.createDataFrame(CUSTOMERS, ["id", "name", "city"]).createOrReplaceTempView("customers")
    yield spark
    spark.catalog.dropTempView("orders")
    spark.catalog.dropTempView("customers")


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_a_captured_query_gives_the_plain_result(views, name: str) -> None:  # type: ignore[no-untyped-def]
    spark = views
    plain = spark.sql(QUERIES[name])
    expected = sorted(map(tuple, plain.collect()), key=repr)
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "plan-capture", values="all", emitter=emitter) as prov:
        tracked = prov.tracked(spark.sql(QUERIES[name]))
        assert tracked.columns == plain.columns
        rows = tracked.named("Out").collect()
    emitted = prov.counts()
    if "LIMIT" in QUERIES[name]:  # ORDER BY decides which rows survive
        assert list(map(tuple, rows)) == list(map(tuple, plain.collect()))
    assert sorted(map(tuple, rows), key=repr) == expected
    nodes, graph = emitted_graph(emitter)
    assert (len(nodes), graph.number_of_edges()) == emitted
    assert len([n for n in nodes.values() if n["relation"] == "Out"]) == len(rows)


def _captured(spark, query: str, relation: str, column: str):  # type: ignore[no-untyped-def]
    """The graph ``query`` emits with its result named ``relation``, and the result's nodes by
    their ``column`` value."""
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(
        spark, f"plan-capture-{relation}", values="all", emitter=emitter
    ) as prov:
        prov.tracked(spark.sql(QUERIES[query])).named(relation).collect()
    nodes, graph = emitted_graph(emitter)
    rows = {
        n["props"][ATTRIBUTE_PREFIX + column]: i
        for i, n in nodes.items()
        if n["relation"] == relation
    }
    return nodes, graph, rows


def _tokens(nodes: dict, relation: str, column: str) -> dict[int, str]:  # type: ignore[type-arg]
    return {
        i: n["props"][ATTRIBUTE_PREFIX + column]
        for i, n in nodes.items()
        if n["op"] == "TOKEN" and n["relation"] == relation
    }


def test_each_output_row_reaches_exactly_the_rows_that_made_it(views) -> None:  # type: ignore[no-untyped-def]
    nodes, graph, totals = _captured(views, "join_group_order", "Totals", "city")
    # Leaves are named by the views they were read through.
    orders, customers = _tokens(nodes, "orders", "oid"), _tokens(nodes, "customers", "name")
    assert sorted(orders.values()) == sorted(str(o[0]) for o in ORDERS)
    city_of = {c[0]: c[2] for c in CUSTOMERS}
    assert set(totals) == {"NY", "LA"}
    for city, node in totals.items():
        ancestors = nx.ancestors(graph, node)
        made_of = {str(o[0]) for o in ORDERS if o[2] > 1.5 and city_of.get(o[1]) == city}
        assert {orders[a] for a in ancestors if a in orders} == made_of
        assert {customers[a] for a in ancestors if a in customers} == {
            c[1]
            for c in CUSTOMERS
            if c[2] == city and any(o[1] == c[0] and o[2] > 1.5 for o in ORDERS)
        }


def test_a_semi_join_from_in_keeps_the_matching_right_rows_in_the_lineage(views) -> None:  # type: ignore[no-untyped-def]
    nodes, graph, kept = _captured(views, "in_subquery", "Kept", "oid")
    customers = _tokens(nodes, "customers", "name")
    assert set(kept) == {"1", "2", "4"}  # customers 10 and 30 live in NY
    name_of = {c[0]: c[1] for c in CUSTOMERS}
    for oid, node in kept.items():
        cust = next(o[1] for o in ORDERS if str(o[0]) == oid)
        assert {customers[a] for a in nx.ancestors(graph, node) if a in customers} == {
            name_of[cust]
        }


@pytest.mark.parametrize(
    ("query", "operator"),
    [
        (
            "SELECT oid, SUM(amount) OVER (ORDER BY oid ROWS 1 PRECEDING) AS moving FROM orders",
            "sum over the frame ROWS BETWEEN",  # a sliding frame: only running ones are rebuilt
        ),
        ("SELECT * FROM orders WHERE cust = (SELECT cust FROM orders)", "more than one row"),
    ],
)
def test_what_cannot_be_rebuilt_is_refused_by_name(views, query: str, operator: str) -> None:  # type: ignore[no-untyped-def]
    spark = views
    emitter = MemoryEmitter(spark)
    with (
        ProvenanceSession(spark, "plan-capture-refused", emitter=emitter) as prov,
        pytest.raises(UnsupportedOperation, match=operator),
    ):
        prov.tracked(spark.sql(query))


def test_a_row_kept_by_a_scalar_subquery_reaches_the_rows_of_its_value(views) -> None:  # type: ignore[no-untyped-def]
    nodes, graph, above = _captured(views, "above_average", "Above", "oid")
    orders = _tokens(nodes, "orders", "oid")  # the outer read
    averaged = _tokens(nodes, "orders_2", "oid")  # the subquery's read
    assert set(above) == {"1", "2", "4"}  # the average is 4.75
    for oid, node in above.items():
        ancestors = nx.ancestors(graph, node)
        assert {orders[a] for a in ancestors if a in orders} == {oid}
        assert {averaged[a] for a in ancestors if a in averaged} == {str(o[0]) for o in ORDERS}


def test_a_row_kept_by_exists_under_or_reaches_its_matches_only(views) -> None:  # type: ignore[no-untyped-def]
    nodes, graph, kept = _captured(views, "exists_under_or", "Kept", "name")
    orders = _tokens(nodes, "orders", "oid")
    assert set(kept) == {"ann", "cy", "di"}  # orders over 5 (ann: 7.5, cy: 9.0), or SF (di)
    want = {"ann": {"2"}, "cy": {"4"}, "di": set()}
    for name, node in kept.items():
        assert {orders[a] for a in nx.ancestors(graph, node) if a in orders} == want[name]


def test_a_running_aggregate_reaches_the_rows_of_its_frame(views) -> None:  # type: ignore[no-untyped-def]
    nodes, graph, upto = _captured(views, "running_range_with_peers", "Upto", "oid")
    orders = _tokens(nodes, "orders", "oid")
    cust = {str(o[0]): o[1] for o in ORDERS}
    assert set(upto) == set(cust)
    for oid, node in upto.items():  # customers ordered down: a row's frame is cust >= its own
        frame = {o for o, c in cust.items() if c >= cust[oid]}
        assert {orders[a] for a in nx.ancestors(graph, node) if a in orders} == frame


def test_a_rank_reaches_the_rows_ranked_before_it(views) -> None:  # type: ignore[no-untyped-def]
    """rank() counts the rows ordered before a row: they are its value's lineage, so the
    witness of the row re-ranked alone gives the same rank (Titian's oracle on TPC-DS q36)."""
    nodes, graph, ranked = _captured(views, "rank_in_city", "Ranked", "oid")
    orders = _tokens(nodes, "orders", "oid")
    amount = {str(o[0]): o[2] for o in ORDERS}
    city = {o[1]: c[2] for o in ORDERS for c in CUSTOMERS if c[0] == o[1]}
    city_of = {str(o[0]): city.get(o[1]) for o in ORDERS}
    assert set(ranked) == {o for o, c in city_of.items() if c is not None}
    for oid, node in ranked.items():
        before = {
            o for o, c in city_of.items() if c == city_of[oid] and amount[o] >= amount[oid]
        }  # same city, amount at least its own (rank orders by amount descending)
        assert {orders[a] for a in nx.ancestors(graph, node) if a in orders} == before


def test_the_kill_switch_hands_the_query_back(views) -> None:  # type: ignore[no-untyped-def]
    spark = views
    with ProvenanceSession(spark, "plan-capture-off", enabled=False) as prov:
        frame = prov.tracked(spark.sql(QUERIES["in_subquery"]))
        assert isinstance(frame, PlainFrame)
        assert sorted(map(tuple, frame.collect())) == sorted(
            map(tuple, spark.sql(QUERIES["in_subquery"]).collect())
        )
