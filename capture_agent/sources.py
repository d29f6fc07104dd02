"""A source row's position: where in its files it lives, when Spark can say.

A source row's TOKEN id is its position XOR a hash of run and source (capture_agent.session's
``source``), and its label ``<relation>#<hi>.<lo>`` is the position's two halves. By default the
position is ``monotonically_increasing_id()`` (partition << 33 | offset: Titian's record id),
which names the row by how Spark split the input: the same file read with another split size,
file order or number of files gives its rows other positions. Where the source is one file scan
that Spark gives a row index for (parquet's ``_metadata.row_index``), the position is the file's
ordinal in the source's sorted file list << 33 | the row's index in its file
(io.sparkprov.capture.SourcePosition): the same row has the same position, hence the same label,
in every run over the same files, however they are read (docs/capture.md, "Source rows
identified by their files").

Only a plan that keeps each file row at most once (projections, filters, samples without
replacement, repartitions, sorts, limits, aliases over one scan) may use it: after a join or an
explode, two rows could share a file row's index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkprov.events import SOURCE_ROW_BITS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from capture_agent.context import CaptureContext

__all__ = ["FilePositions", "file_key", "file_positions", "java_sorted", "position_in_spark"]

# Operators whose every output row is one input row, unchanged in identity.
_ROW_KEEPING = {
    *("Project", "Filter", "SubqueryAlias", "Sample", "ResolvedHint", "View"),
    *("Repartition", "RepartitionByExpression", "Sort", "GlobalLimit", "LocalLimit", "Offset"),
}
_SCAN = "LogicalRelation"
_META = "_metadata"
ROW_BITS = SOURCE_ROW_BITS  # io.sparkprov.capture.FileOrdinals.ROW_BITS
MAX_FILES = 1 << 30


@dataclass(frozen=True)
class FilePositions:
    """The position column of a file source's rows and the files its ordinals index."""

    column: Column
    files: tuple[str, ...]


def java_sorted(files: list[str]) -> tuple[str, ...]:
    """``files`` in Java's String order (UTF-16 code units), as the capture jar sorts them, so
    both capture paths give a file the same ordinal."""
    return tuple(sorted(files, key=lambda f: f.encode("utf-16-be", "surrogatepass")))


def file_key(file: str) -> str:
    """A file's identity across Spark's spellings of it (``file:/a`` and ``file:///a``), as
    io.sparkprov.capture.FileOrdinals.key: scheme, authority and the decoded path."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(file)
    if not parts.scheme:
        return file
    return f"{parts.scheme}://{parts.netloc}{unquote(parts.path)}"


def _one_scan(plan: Any) -> bool:
    """Whether ``plan`` is row-keeping operators over one file scan."""
    node = plan
    while True:
        name = node.getClass().getSimpleName()
        children = list(_children(node))
        if name == _SCAN:
            return not children
        if name not in _ROW_KEEPING or len(children) != 1:
            return False
        if name == "Sample" and node.withReplacement():  # may repeat a row
            return False
        node = children[0]


def _children(node: Any) -> list[Any]:
    seq = node.children()
    return [seq.apply(i) for i in range(seq.size())]


def file_positions(ctx: CaptureContext, df: DataFrame) -> FilePositions | None:
    """The physical positions of ``df``'s rows, or None where they are not known (not one file
    scan, no row index in its format, a column of the user's named ``_metadata``)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    if _META in df.columns:
        return None
    jdf = getattr(df, "_jdf", None)  # Spark Connect's frames have no JVM plan here
    if jdf is None:
        return None
    try:
        if not _one_scan(jdf.queryExecution().analyzed()):
            return None
        fields = df.select(f"{_META}.*").columns
    except AnalysisException:
        return None
    if "row_index" not in fields or "file_path" not in fields:
        return None
    files = ctx.jvm.sorted_input_files(jdf) if ctx.jvm is not None else java_sorted(df.inputFiles())
    if not files or len(files) > MAX_FILES:
        return None
    path, row = F.col(f"{_META}.file_path"), F.col(f"{_META}.row_index")
    if ctx.jvm is not None:
        return FilePositions(ctx.jvm.source_position(path, row, files), files)
    return FilePositions(position_in_spark(path, row, files), files)


def position_in_spark(path: Column, row: Column, files: tuple[str, ...]) -> Column:
    """The same position with Spark's own functions (the Python capture points, no jar): the
    ordinal bits looked up in a literal map keyed by each file's spellings; a file outside it,
    or a row index past its bits, fails the task naming it."""
    from pyspark.sql import functions as F

    pairs: dict[str, int] = {}
    for i, f in enumerate(files):
        key = file_key(f)
        for spelling in (f, f.replace(":///", ":/", 1), key, key.replace(":///", ":/", 1)):
            pairs.setdefault(spelling, i << ROW_BITS)
    mapping = F.create_map(*[F.lit(x) for k, v in pairs.items() for x in (k, v)])
    bits = F.element_at(mapping, path)
    known = F.when(
        bits.isNull(),
        F.raise_error(
            F.concat(
                F.lit("sparkprov: the source row's file "),
                path,
                F.lit(f" is not one of the {len(files)} files listed when the source was captured"),
            )
        ),
    ).otherwise(bits)
    checked = F.when(
        (row < 0) | (F.shiftrightunsigned(row, ROW_BITS) != 0),
        F.raise_error(F.lit(f"sparkprov: a row index of a file is past the {ROW_BITS} bits")),
    ).otherwise(row)
    return known.cast("long").bitwiseOR(checked)
