"""Derived ids (sparkprov.derived's salt_of and derive) against the test vectors that the plugin's
DerivedIdsTest and the capture jar's EmissionTest read too: one file holds the contract, and
each language checks it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sparkprov.derived import _encode, derive, salt_of, underive

VECTORS = Path(__file__).resolve().parents[2] / "neo4j_plugin/src/test/resources/derived-ids.json"


def _vectors() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(VECTORS.read_text())
    return data


def test_salts_are_the_vectors() -> None:
    salts = _vectors()["salts"]
    assert len(salts) > 30
    for case in salts:
        parts = tuple(case["parts"])
        assert _encode(parts) == case["encoding"].encode(), parts
        assert int(salt_of(*parts)) == case["salt"] % 2**64, parts
        assert f"{int(salt_of(*parts)):016x}" == case["hex"], parts


def test_the_encoding_is_the_documented_rule() -> None:
    # Written out by hand, apart from _encode: a tag, the payload's UTF-8 length, ':', the payload.
    data = b"s3:g#0i2:12" + "s7:gr\u00f6\u00dfe".encode()
    assert len("gr\u00f6\u00dfe".encode()) == 7
    expected = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")
    assert int(salt_of("g#0", 12, "gr\u00f6\u00dfe")) == expected


def test_no_two_vectors_share_an_encoding_or_a_salt() -> None:
    salts = _vectors()["salts"]
    assert len({c["encoding"] for c in salts}) == len(salts)
    assert len({c["salt"] for c in salts}) == len(salts)
    assert salt_of("a", "bc") != salt_of("ab", "c")
    assert salt_of("g", 1, "tensor") != salt_of("g", "1", "tensor")


def test_derive_is_the_vectors_and_underive_inverts_it() -> None:
    for case in _vectors()["derive"]:
        ids = np.array([case["id"]], dtype=np.int64)
        salt = np.uint64(case["salt"] % 2**64)
        assert int(derive(ids, salt)[0]) == case["derived"], case
        assert int(underive(derive(ids, salt), salt)[0]) == case["id"], case


@pytest.mark.parametrize("part", [True, 1.0, None, b"key", np.int64(1)])
def test_a_salt_part_is_a_str_or_an_int(part: object) -> None:
    with pytest.raises(TypeError, match="a salt part is a str or an int"):
        salt_of("g#0", part, "value")  # type: ignore[arg-type]


def test_a_string_part_is_valid_unicode() -> None:
    with pytest.raises(UnicodeEncodeError):
        salt_of("lone \ud800", "member")
