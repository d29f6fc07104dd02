"""Where a run's rows live, for its OpenLineage datasets (capture_agent.openlineage): the files a
source was read from, and the target a tracked frame is written to.

:class:`TrackedWriter` is what ``TrackedFrame.write`` returns: Spark's ``DataFrameWriter``,
unchanged in what it does, that records the path or table of a successful save as an output
dataset of the run. Options (``mode``, ``format``, ``option``, ``partitionBy``, ...) chain as
on Spark's writer.
"""

from __future__ import annotations

from typing import Any

from capture_agent.openlineage import (
    RunDatasets,
    file_datasets,
    location_dataset,
    schema_fields,
)

__all__ = ["TrackedWriter", "default_fs", "source_datasets"]

# The writer's methods that write to a path (its first argument or ``path=``).
_TO_PATH = ("save", "parquet", "csv", "json", "orc", "text")
# ... and to a table (its first argument, ``name=`` or ``tableName=``).
_TO_TABLE = ("saveAsTable", "insertInto")


def default_fs(spark: Any) -> str:
    """Hadoop's ``fs.defaultFS`` of the session: where a path without a scheme lives."""
    try:
        return str(spark.sparkContext._jsc.hadoopConfiguration().get("fs.defaultFS"))
    except Exception:  # no JVM (Spark Connect): local paths
        return "file:///"


def source_datasets(df: Any) -> list[tuple[str, str]]:
    """The datasets of the files ``df`` reads (none for a DataFrame built in memory)."""
    try:
        files = df.inputFiles()
    except Exception:  # a source Spark cannot list (e.g. JDBC): no physical identity
        return []
    return file_datasets(files, default_fs(df.sparkSession))


class TrackedWriter:
    def __init__(self, writer: Any, df: Any, relation: str, datasets: RunDatasets) -> None:
        self._writer = writer
        self._df = df
        self._relation = relation
        self._datasets = datasets

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._writer, name)
        if not callable(attribute):
            return attribute
        if name in _TO_PATH:
            return self._saving(attribute, "path")
        if name in _TO_TABLE:
            return self._saving(attribute, "table")

        def chained(*args: Any, **kwargs: Any) -> Any:
            result = attribute(*args, **kwargs)
            return self if result is self._writer else result

        return chained

    def _saving(self, method: Any, kind: str) -> Any:
        def save(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            target = (
                args[0] if args else kwargs.get(kind, kwargs.get("name", kwargs.get("tableName")))
            )
            if isinstance(target, str) and target:
                self._record(target, kind)
            return result

        return save

    def _record(self, target: str, kind: str) -> None:
        spark = self._df.sparkSession
        if kind == "path":
            found = [location_dataset(target, default_fs(spark))]
        else:  # a table: where its files are
            found = source_datasets(spark.table(target))
        for dataset in found:
            self._datasets.written(self._relation, dataset, schema_fields(self._df.schema))
