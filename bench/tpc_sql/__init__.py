"""TPC-H (22) and TPC-DS (99) as SQL text: DuckDB's generators and query texts, the texts adapted
to Spark SQL in one reviewed table (:mod:`bench.tpc_sql.queries`), and a runner that checks
``spark.sql`` against DuckDB on the same parquet files (:mod:`bench.tpc_sql.run`)."""
