"""Size limits of everything the lineage wire carries, defined once for writers and readers.

Why these numbers: Neo4j refuses a string property longer than about 8 KB in a range index (the
write fails with "Property value is too large to index", which no retry fixes). The strings it
indexes for us are run ids (``Run.run_id``, ``Node.pending_run``, ``Node(run_id, relation)``),
relation names (the same composite index) and workflows (``Run.workflow``); see
sparkprov/schema.cypher. Names are held to :data:`MAX_NAME_BYTES`, so even the composite key of a
run id and a relation stays far below the index limit. Texts that are stored but never indexed
(labels, values, attribute values, a run's error) may be larger, up to :data:`MAX_TEXT_BYTES`; an
event as a whole is bounded by ``sparkprov.events.MAX_EVENT_BYTES``. Sizes are UTF-8 bytes.

Writers: ``sparkprov.events.encode_*`` raise :class:`LimitExceeded` (a ValueError naming the field
and the limit) before anything is sent, so the capture agent fails the call that produced the
value. Data values are the exception: a row's attribute value, a v-node's value or a label made
from data can be of any size, and lineage is the ids, not the values, so the capture agent keeps
such a text :func:`truncate`-d to :data:`MAX_TEXT_BYTES` and marked (the JVM taps do the same,
byte for byte: io.sparkprov.capture.Texts) rather than fail the user's job. Readers: ingest's
decoder dead-letters such an event with reason ``limit:<field>``.
:func:`quote` is how any message shows an input: a short prefix, never the whole value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

__all__ = [
    "MAX_AGGREGATES_PER_BLOCK",
    "MAX_ATTRIBUTES_PER_BLOCK",
    "MAX_BLOCKS_PER_BATCH",
    "MAX_EDGES_PER_BATCH",
    "MAX_IDS_PER_BLOCK",
    "MAX_NAME_BYTES",
    "MAX_TAP_BYTES",
    "MAX_TEXT_BYTES",
    "QUOTE_CHARS",
    "LimitExceeded",
    "check_batch",
    "check_block",
    "check_count",
    "check_envelope",
    "check_members",
    "check_name",
    "check_string",
    "check_strings",
    "quote",
    "quote_all",
    "truncate",
    "truncate_all",
    "truncation_mark",
]

_Text = TypeVar("_Text", str, str | None)

# Run ids, workflows, relation names, split names, attribute names, application ids.
MAX_NAME_BYTES = 512
# A capture point's key: the operator and a relation or module name (logged, not stored).
MAX_TAP_BYTES = 1024
# Labels, v-node values, attribute values, a failed run's error: stored, never indexed.
MAX_TEXT_BYTES = 64 * 1024
# Files of one source a run marker lists (lineage.proto's SourceFiles): a marker stays one
# Kafka message; a source of more files keeps its positions, not its file list.
MAX_SOURCE_FILES = 2_000
# Counts per batch. The capture agent sends 2,048 rows a message (a few blocks of them); these
# bound what one message may ask of one write transaction.
MAX_IDS_PER_BLOCK = 100_000
MAX_BLOCKS_PER_BATCH = 1_000
MAX_ATTRIBUTES_PER_BLOCK = 256
# Aggregated columns of one member block (each expands into two node blocks).
MAX_AGGREGATES_PER_BLOCK = 256
MAX_EDGES_PER_BATCH = 1_000_000
# How much of an input a message quotes.
QUOTE_CHARS = 64


def truncation_mark(size: int) -> str:
    """What ends a truncated text: the size in UTF-8 bytes of the whole value."""
    return f"…[truncated: {size} bytes]"


def truncate(value: str, limit: int = MAX_TEXT_BYTES) -> str:
    """``value`` if it fits in ``limit`` UTF-8 bytes; else its longest prefix, cut at a character
    boundary, followed by :func:`truncation_mark`, all of it at most ``limit`` bytes."""
    if len(value) * 4 <= limit:
        return value
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return value
    mark = truncation_mark(len(raw))
    head = raw[: max(0, limit - len(mark.encode("utf-8")))]
    # The cut may fall inside a character: its leading bytes go (Texts.java backs off alike).
    return head.decode("utf-8", "ignore") + mark


def truncate_all(values: Sequence[_Text], limit: int = MAX_TEXT_BYTES) -> Sequence[_Text]:
    """:func:`truncate` of every text of a column (None stays); the column itself when every
    text fits, as nearly always (one pass over the lengths)."""
    longest = max((len(v) for v in values if v is not None), default=0)
    if longest * 4 <= limit:
        return values
    return [v if v is None else truncate(v, limit) for v in values]


class LimitExceeded(ValueError):
    """A value is over its limit; ``field`` names it (as in the protobuf message)."""

    def __init__(self, field: str, limit: int, size: int, unit: str = "bytes") -> None:
        super().__init__(f"{field} is {size} {unit}, over the limit of {limit} {unit}")
        self.field = field
        self.limit = limit
        self.size = size


def quote(text: str, chars: int = QUOTE_CHARS) -> str:
    """``repr`` of at most ``chars`` characters of ``text``, with "..." when cut."""
    if len(text) <= chars:
        return repr(text)
    return repr(text[:chars]) + f"... ({len(text)} characters)"


def quote_all(texts: Sequence[str], count: int = 10) -> str:
    """The first ``count`` of ``texts``, each quoted, and how many more there are."""
    shown = ", ".join(quote(t) for t in texts[:count])
    return shown + (f" and {len(texts) - count} more" if len(texts) > count else "")


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def check_string(field: str, value: str, limit: int) -> None:
    # A character is at most 4 bytes in UTF-8: short strings need no encoding.
    if len(value) * 4 > limit and _utf8(value) > limit:
        raise LimitExceeded(field, limit, _utf8(value))


def check_name(field: str, value: str) -> None:
    """A name (run id, workflow, relation, module, split, attribute): at most MAX_NAME_BYTES."""
    check_string(field, value, MAX_NAME_BYTES)


def check_strings(field: str, values: Iterable[str | None], limit: int) -> None:
    """Every value of a column (None allowed); fast when all are short, as they nearly are."""
    values = values if isinstance(values, Sequence) else list(values)
    try:
        longest = max(map(len, values), default=0)
    except TypeError:  # None entries (null attribute values)
        longest = max(map(len, filter(None, values)), default=0)
    if longest * 4 <= limit:
        return
    for value in values:
        if value:
            check_string(field, value, limit)


def check_count(field: str, count: int, limit: int) -> None:
    if count > limit:
        raise LimitExceeded(field, limit, count, unit="entries")


def check_envelope(run_id: str, workflow: str) -> None:
    check_string("run_id", run_id, MAX_NAME_BYTES)
    check_string("workflow", workflow, MAX_NAME_BYTES)


def check_batch(tap: str, blocks: int, edges: int) -> None:
    check_string("tap", tap, MAX_TAP_BYTES)
    check_count("blocks_per_batch", blocks, MAX_BLOCKS_PER_BATCH)
    check_count("edges_per_batch", edges, MAX_EDGES_PER_BATCH)


def check_block(
    *,
    ids: int,
    label: str,
    labels: Sequence[str],
    relation: str,
    attribute_names: Sequence[str],
    attribute_columns: Iterable[Sequence[str | None]],
    values: Sequence[str],
    split: Sequence[str],
) -> None:
    """One node block, whether a ``NodeColumns`` or a decoded ``NodeBlock``."""
    check_count("ids_per_block", ids, MAX_IDS_PER_BLOCK)
    check_count("attributes_per_block", len(attribute_names), MAX_ATTRIBUTES_PER_BLOCK)
    check_string("relation", relation, MAX_NAME_BYTES)
    check_strings("split", split, MAX_NAME_BYTES)
    check_strings("attribute_names", attribute_names, MAX_NAME_BYTES)
    check_string("label", label, MAX_TEXT_BYTES)
    check_strings("labels", labels, MAX_TEXT_BYTES)
    check_strings("values", values, MAX_TEXT_BYTES)
    for column in attribute_columns:
        check_strings("attribute_values", column, MAX_TEXT_BYTES)


def check_members(
    *,
    ids: int,
    group_key: str,
    aggregates: int,
    value_columns: Iterable[Sequence[str | None]],
    split: Sequence[str],
) -> None:
    """One member block, whether a ``MemberColumns`` or a decoded ``MemberBlock``. The group key
    is a capture key (hashed into salts, never stored); the values become VALUE labels and
    values. The batch's counts are checked on the expansion (:func:`check_batch`)."""
    check_count("ids_per_block", ids, MAX_IDS_PER_BLOCK)
    check_count("aggregates_per_block", aggregates, MAX_AGGREGATES_PER_BLOCK)
    check_string("group_key", group_key, MAX_TAP_BYTES)
    check_strings("split", split, MAX_NAME_BYTES)
    for column in value_columns:
        check_strings("values", column, MAX_TEXT_BYTES)
