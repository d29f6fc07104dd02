"""TPC-H in PySpark: the eight tables from a seeded generator (:mod:`bench.tpch.data`) and the
22 queries with the DataFrame API (:mod:`bench.tpch.queries`)."""

from bench.tpch.data import KEYS, tables
from bench.tpch.queries import QUERIES

__all__ = ["KEYS", "QUERIES", "tables"]
