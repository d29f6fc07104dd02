"""Split paths chosen by the capture session (no Spark needed: a stand-in context, Python capture
points, an emitter that sends nowhere)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capture_agent import CaptureSettings, ProvenanceSession
from capture_agent.emitters import NoopEmitter


def _session(**kwargs: Any) -> ProvenanceSession:
    counts = SimpleNamespace(add=lambda *a: None)
    spark = SimpleNamespace(sparkContext=SimpleNamespace(accumulator=lambda *a: counts))
    return ProvenanceSession(
        spark,  # type: ignore[arg-type]
        "w",
        settings=CaptureSettings(capture="python"),
        emitter=NoopEmitter(),
        **kwargs,
    )


def test_default_is_one_split_per_module_with_relations_as_sub_splits() -> None:
    prov = _session()
    assert prov.split_for() == ("main",)
    assert prov.split_for("Requests") == ("main", "Requests")
    with prov.module("dealer1"):
        assert prov.split_for() == ("dealer1",)
        assert prov.split_for("Cars") == ("dealer1", "Cars")
        with prov.module("inner"):
            assert prov.split_for("X") == ("inner", "X")
        assert prov.split_for() == ("dealer1",)
    assert prov.split_for() == ("main",)


def test_configured_paths_win_and_are_validated() -> None:
    prov = _session(splits={"Cars": ["inventory", "cars"], "dealer2": "dealers"})
    assert prov.split_for("Cars") == ("inventory", "cars")
    with prov.module("dealer2"):
        assert prov.split_for() == ("dealers",)
        assert prov.split_for("Bids") == ("dealers", "Bids")
    for bad in ([], ["a", "b", "c", "d"], ["a", ""]):
        with pytest.raises(ValueError, match="split path of 'R'"):
            _session(splits={"R": bad})
