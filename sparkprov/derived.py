"""Derived node ids, and the group members' compact record with its one expansion.

Nodes derived from other nodes (a member's TENSOR and VALUE nodes, a group's AGGREGATE nodes, a
semi join's PLUS) get ids that anyone holding the parents can compute: splitmix64 of the parent
id and a salt (:func:`derive`, :func:`salt_of`). So the capture agent need not send them one by
one: for group members it sends a :class:`MemberColumns` record (member ids, group ids, the
aggregated values as text) and the reader calls :meth:`MemberColumns.expand`, which yields exactly
the nodes and edges the capture agent computed before (ids, ops, labels, values, edge order).
The capture agent's tap (``capture_agent.taps.MemberSpec``) and the event decoder
(``sparkprov.events.decode``) both use this module: there is one definition of the expansion.

Per member ``m`` of group ``g`` (``key``: the group's capture key) and aggregated column ``i``
with a non-null value ``v``: ``pair = m ^ derive(g, salt_of(key, "member"))`` (a member of several
groups, as in rollup/cube, gets one pair per group), a TENSOR ``derive(pair, salt_of(key, i,
"tensor"))`` labelled "⊗", a VALUE ``derive(pair, salt_of(key, i, "value"))`` with label and value
``v``, and the edges m -> TENSOR, VALUE -> TENSOR, TENSOR -> AGGREGATE ``derive(g, salt_of(key, i,
"aggregate"))``; with ``delta``, first the edges m -> g (the group's DELTA row) of every member.

The salt of parts ``(p1, ..., pn)`` (strings and integers) is the BLAKE2b hash with an 8-byte
digest (``hashlib.blake2b(data, digest_size=8)``, no key) of the parts' encoding, read as a
big-endian unsigned 64-bit integer (a signed ``long`` of the same bits in Java). The encoding is
the concatenation, in order and with no separator, of each part as a tag, the length of its
payload in UTF-8 bytes in decimal, a colon and the payload: ``s<len>:<text>`` for a string (its
UTF-8 bytes, any code point but surrogates, NUL included) and ``i<len>:<decimal>`` for an
integer (``-`` for a negative one, no leading zeros). So ``("g#0", 1, "aggregate")`` encodes as
``s3:g#0i1:1s9:aggregate``. Every part says where it ends, so no two tuples share an encoding and
nothing is escaped. The vectors in ``neo4j_plugin/src/test/resources/derived-ids.json`` hold
this rule: tests/unit/test_derived_ids.py, the plugin's ``DerivedIdsTest`` and the capture jar's
``EmissionTest`` all check them.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DerivedColumn",
    "DerivedNodes",
    "Expansion",
    "MemberColumns",
    "derive",
    "salt_of",
    "position_labels",
    "underive",
    "xxhash64_longs",
]

# monotonically_increasing_id packs the partition above the low 33 bits (Titian's record id).
_OFFSET_BITS = 33


def salt_of(*parts: str | int) -> np.uint64:
    """A 64-bit salt naming one kind of derived node: BLAKE2b-64 of the parts' encoding (the
    module's docstring states the rule)."""
    return np.uint64(_salt(_encode(parts)))


def _encode(parts: tuple[str | int, ...]) -> bytes:
    out = []
    for part in parts:
        # bool is an int subclass: refuse it rather than hash True as 1.
        if isinstance(part, str):
            tag, payload = b"s", part.encode()
        elif isinstance(part, int) and not isinstance(part, bool):
            tag, payload = b"i", str(part).encode()
        else:
            raise TypeError(f"a salt part is a str or an int, not {type(part).__name__}")
        out += [tag, str(len(payload)).encode(), b":", payload]
    return b"".join(out)


@functools.lru_cache(maxsize=4096)
def _salt(data: bytes) -> int:
    # A decoder derives the same few salts for every batch of a tap: hash each encoding once.
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def derive(ids: np.ndarray, salt: np.uint64) -> np.ndarray:
    """Ids of nodes derived from other nodes (tensors, values, aggregates): splitmix64 of the
    parent id and a salt, vectorized, so Spark need not compute or ship them."""
    with np.errstate(over="ignore"):
        z = ids.astype(np.int64).view(np.uint64) + salt * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z.view(np.int64)


_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_M1_INV, _M2_INV = pow(_M1, -1, 2**64), pow(_M2, -1, 2**64)


_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _hash_long(values: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """Spark's XXH64.hashLong (XXH64 of the long's 8 little-endian bytes), element-wise."""
    v = values.view(np.uint64)
    h = seeds + _P5 + np.uint64(8)
    h = h ^ (_rotl(v * _P2, 31) * _P1)
    h = _rotl(h, 27) * _P1 + _P4
    h = (h ^ (h >> np.uint64(33))) * _P2
    h = (h ^ (h >> np.uint64(29))) * _P3
    return h ^ (h >> np.uint64(32))


def position_labels(relation: str, positions: np.ndarray) -> list[str]:
    """Source rows' TOKEN labels ``relation#partition.offset`` from their positions
    (``monotonically_increasing_id``)."""
    partitions = (positions >> _OFFSET_BITS).tolist()
    offsets = (positions & ((1 << _OFFSET_BITS) - 1)).tolist()
    return [f"{relation}#{p}.{o}" for p, o in zip(partitions, offsets, strict=True)]


def xxhash64_longs(
    seed: int, *columns: np.ndarray, nulls: Sequence[np.ndarray | None] = ()
) -> np.ndarray:
    """Spark's ``xxhash64(c1, c2, ...)`` of bigint columns with the given seed, vectorized: each
    column's hash seeds the next, and a null (``nulls[k]`` true at that row) leaves the hash as it
    was, as Spark skips null inputs. The capture's node ids are such hashes
    (capture_agent/context.py's node_id), so a reader derives them from their inputs
    (lineage.proto's DerivedIds)."""
    n = len(columns[0]) if columns else 0
    with np.errstate(over="ignore"):
        h = np.full(n, np.int64(seed)).view(np.uint64)
        for k, column in enumerate(columns):
            hashed = _hash_long(np.ascontiguousarray(column, dtype=np.int64), h)
            mask = nulls[k] if k < len(nulls) else None
            h = hashed if mask is None else np.where(mask, h, hashed)
    return h.view(np.int64)


def underive(ids: np.ndarray, salt: np.uint64) -> np.ndarray:
    """The parent ids of derived ids: :func:`derive`'s inverse for one salt (splitmix64's
    finalizer is a bijection), so a reader given a derived id finds what it was derived from."""
    with np.errstate(over="ignore"):
        z = ids.astype(np.int64).view(np.uint64)
        z = z ^ (z >> np.uint64(31)) ^ (z >> np.uint64(62))
        z = z * np.uint64(_M2_INV)
        z = z ^ (z >> np.uint64(27)) ^ (z >> np.uint64(54))
        z = z * np.uint64(_M1_INV)
        z = z ^ (z >> np.uint64(30)) ^ (z >> np.uint64(60))
        z = z - salt * np.uint64(0x9E3779B97F4A7C15)
    out: np.ndarray = z.view(np.int64)
    return out


@dataclass(frozen=True)
class DerivedNodes:
    """One block of expanded nodes of one op: ``texts`` are the labels and values (VALUE), or
    empty (TENSOR, whose label is ``label``)."""

    op: str
    ids: np.ndarray
    label: str = ""
    texts: Sequence[str] = ()


@dataclass(frozen=True)
class Expansion:
    """What a member record stands for: node blocks and edges (``src[k]`` -> ``dst[k]``)."""

    nodes: list[DerivedNodes]
    src: np.ndarray
    dst: np.ndarray


@dataclass(frozen=True)
class DerivedColumn:
    """The nodes derived for one aggregated column of a member record: for the members at
    ``rows`` (those whose value is not null), their TENSOR and VALUE ids, the AGGREGATE each
    TENSOR feeds, and the values' texts."""

    index: int
    rows: np.ndarray
    members: np.ndarray
    tensors: np.ndarray
    values: np.ndarray
    aggregates: np.ndarray
    texts: Sequence[str]


@dataclass(frozen=True)
class MemberColumns:
    """Group members of one chunk, as they travel: the compact form of their TENSOR and VALUE
    nodes and edges. ``values`` holds one column per aggregated column, one text per member,
    ``None`` where the member's value is null (no TENSOR or VALUE for it; it stays a member)."""

    group_key: str
    members: np.ndarray  # int64 member ids
    groups: np.ndarray  # int64 group ids (the DELTA row's id), one per member
    delta: bool = True  # False for window partitions: no member -> DELTA edges
    values: Sequence[Sequence[str | None]] = ()
    split: Sequence[str] = ()
    # Where the members are the rows of a join that sent nothing of its own (lineage.proto,
    # MemberBlock.join_rows): each member's left and right parent. The members are then TIMES
    # nodes (label "·") with an edge from each parent (one where the two are the same row).
    lefts: np.ndarray | None = None
    rights: np.ndarray | None = None

    @property
    def aggregates(self) -> int:
        return len(self.values)

    @property
    def join_rows(self) -> bool:
        return self.lefts is not None

    def join_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """The edges into the members' TIMES nodes (:attr:`lefts`, :attr:`rights`): left ->
        member, then right -> member where the right row is not the left one."""
        assert self.lefts is not None and self.rights is not None
        members = np.asarray(self.members, dtype=np.int64)
        lefts = np.asarray(self.lefts, dtype=np.int64)
        rights = np.asarray(self.rights, dtype=np.int64)
        other = rights != lefts
        return np.concatenate([lefts, rights[other]]), np.concatenate([members, members[other]])

    @property
    def block_count(self) -> int:
        """Node blocks of :meth:`expand`: a TENSOR and a VALUE block per aggregated column (and
        the TIMES block of :attr:`join_rows`)."""
        return 2 * self.aggregates + self.join_rows

    def present_counts(self) -> list[int]:
        """Members with a non-null value, per aggregated column."""
        return [len(column) - _count_none(column) for column in self.values]

    @property
    def node_count(self) -> int:
        """Nodes of :meth:`expand`, without expanding: a TENSOR and a VALUE per non-null value
        (and a TIMES per member of :attr:`join_rows`)."""
        times = len(self.members) if self.join_rows else 0
        return times + 2 * sum(self.present_counts())

    @property
    def edge_count(self) -> int:
        """Edges of :meth:`expand`, without expanding."""
        joins = len(self.join_edges()[0]) if self.join_rows else 0
        return joins + (len(self.members) if self.delta else 0) + 3 * sum(self.present_counts())

    def pairs(self) -> np.ndarray:
        """Each member's pair id, from which its TENSOR and VALUE ids derive (one per group a
        member belongs to)."""
        members = np.asarray(self.members, dtype=np.int64)
        groups = np.asarray(self.groups, dtype=np.int64)
        pairs: np.ndarray = members ^ derive(groups, salt_of(self.group_key, "member"))
        return pairs

    def derived_columns(self) -> list[DerivedColumn]:
        """Per aggregated column, the members with a value and the ids derived for them."""
        members = np.asarray(self.members, dtype=np.int64)
        groups = np.asarray(self.groups, dtype=np.int64)
        key = self.group_key
        pairs = self.pairs() if self.values else members
        out = []
        for i, column in enumerate(self.values):
            if _count_none(column) == 0:  # no null value: no copies
                rows = np.arange(len(members))
                pair, in_groups = pairs, groups
                texts: Sequence[str] = column  # type: ignore[assignment]
            else:
                present = np.fromiter((v is not None for v in column), bool, len(column))
                rows = np.flatnonzero(present)
                pair, in_groups = pairs[present], groups[present]
                texts = [v for v in column if v is not None]
            out.append(
                DerivedColumn(
                    index=i,
                    rows=rows,
                    members=members[rows] if len(rows) != len(members) else members,
                    tensors=derive(pair, salt_of(key, i, "tensor")),
                    values=derive(pair, salt_of(key, i, "value")),
                    aggregates=derive(in_groups, salt_of(key, i, "aggregate")),
                    texts=texts,
                )
            )
        return out

    def expand(self) -> Expansion:
        members = np.asarray(self.members, dtype=np.int64)
        groups = np.asarray(self.groups, dtype=np.int64)
        src = [members] if self.delta else []
        dst = [groups] if self.delta else []
        nodes: list[DerivedNodes] = []
        if self.join_rows:
            nodes.append(DerivedNodes("TIMES", members, label="·"))
            lefts, times = self.join_edges()
            src.insert(0, lefts)
            dst.insert(0, times)
        for c in self.derived_columns():
            nodes.append(DerivedNodes("TENSOR", c.tensors, label="⊗"))
            nodes.append(DerivedNodes("VALUE", c.values, texts=c.texts))
            src += [c.members, c.values, c.tensors]
            dst += [c.tensors, c.tensors, c.aggregates]
        if not src:
            empty = np.empty(0, dtype=np.int64)
            return Expansion(nodes, empty, empty)
        return Expansion(nodes, np.concatenate(src), np.concatenate(dst))


def _count_none(column: Sequence[str | None]) -> int:
    if isinstance(column, list):
        return column.count(None)  # C speed for the common case
    return sum(1 for v in column if v is None)
