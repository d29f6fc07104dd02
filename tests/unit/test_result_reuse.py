"""Sink reuse without Spark: the run-complete marker's reuses, the stored results' manifest,
its key and its damage checks (capture_agent.result_manifest), the sink sub-DAG (reuse)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from capture_agent import result_manifest as rm
from capture_agent.result_manifest import StoredResult
from capture_agent.reuse import sub_dag
from sparkprov import events
from sparkprov.events import MalformedEvent, ReusedResult
from sparkprov.v1 import lineage_pb2
from sparkprov.workflow import DagBuilder


def test_reuses_round_trip_in_the_run_complete_marker() -> None:
    reuses = [ReusedResult("ca", "v1", "run-a"), ReusedResult("wordcloud", "v2", "run-a")]
    done = events.decode(events.encode_run_complete("r", "wf", 3, 4, reuses=reuses))
    assert isinstance(done, events.RunComplete)
    assert done.reuses == tuple(reuses)
    plain = events.decode(events.encode_run_complete("r", "wf", 3, 4))
    assert isinstance(plain, events.RunComplete) and plain.reuses == ()


def test_a_reuse_without_its_run_is_refused_on_both_sides() -> None:
    with pytest.raises(ValueError, match="bad_reuse"):
        events.encode_run_complete("r", "wf", 1, 1, reuses=[ReusedResult("ca", "v1", "")])
    event = lineage_pb2.LineageEvent(
        schema_version=events.SCHEMA_VERSION, run_id="r", workflow="wf"
    )
    event.run_complete.reuses.add(sink="ca", version="", run_id="a")
    with pytest.raises(MalformedEvent) as info:
        events.decode(event.SerializeToString())
    assert info.value.reason == "bad_reuse"


def _dag() -> tuple[DagBuilder, int]:
    builder = DagBuilder()
    tweets = builder.add("source", {"relation": "tweet"}, [], [("tid", "bigint")])
    states = builder.add("source", {"relation": "state"}, [], [("s", "string")])
    kept = builder.add("filter", {"predicate": "(tid > 3)"}, [tweets], [("tid", "bigint")])
    builder.add("named", {"relation": "other"}, [states], [("s", "string")])
    sink = builder.add("named", {"relation": "kept"}, [kept], [("tid", "bigint")])
    return builder, sink


def test_sub_dag_is_the_sink_and_its_ancestors_only() -> None:
    builder, _ = _dag()
    found = sub_dag(builder.dag(), "kept")
    assert found is not None
    dag, sink = found
    assert {o.kind for o in dag.operators} == {"source", "filter", "named"}
    assert dag.sinks == (("kept", sink.id),)
    assert {o.param("relation") for o in dag.operators if o.kind == "source"} == {"tweet"}
    assert sub_dag(builder.dag(), "nope") is None


def _stored(folder: Path, tmp: Path, **changes: object) -> tuple[Path, StoredResult]:
    builder, _ = _dag()
    found = sub_dag(builder.dag(), "kept")
    assert found is not None
    dag, sink = found
    sources = {"tweet": "f1"}
    entry = rm.entry_dir(tmp, "wf/1", "kept", sink.id, sources)
    data = entry / "data-run1"
    data.mkdir(parents=True)
    pq.write_table(pa.table({"tid": [4, 5, 6]}), data / "part-0.parquet")
    (data / "_SUCCESS").write_text("")
    fields: dict[str, object] = {
        "workflow": "wf/1",
        "sink": "kept",
        "version": sink.id,
        "run_id": "run1",
        "rows": rm.parquet_rows(data),
        "schema": (("tid", "bigint"),),
        "sources": sources,
        "dag": dag.to_json(),
        "data": "data-run1",
        "files": rm.file_digests(data),
    }
    fields.update(changes)
    stored = StoredResult(**fields)  # type: ignore[arg-type]
    rm.write_manifest(entry, stored)
    return entry, stored


def test_manifest_round_trip_and_lookup(tmp_path: Path) -> None:
    entry, stored = _stored(tmp_path, tmp_path)
    assert stored.rows == 3 and list(stored.files) == ["part-0.parquet"]
    # workflow names are percent-encoded: "wf/1" is one folder
    assert entry.parent.parent.name == "wf%2F1"
    found = rm.candidates(tmp_path, "wf/1", "kept")
    assert found == [(entry, stored)]
    assert found[0][1].sub_dag().sink("kept") is not None
    assert rm.damage(entry, stored) is None
    assert rm.candidates(tmp_path, "wf/1", "other") == []


def test_key_depends_on_the_sources_content(tmp_path: Path) -> None:
    a = rm.entry_dir(tmp_path, "wf", "kept", "v", {"tweet": "f1", "state": "f2"})
    b = rm.entry_dir(tmp_path, "wf", "kept", "v", {"state": "f2", "tweet": "f1"})
    c = rm.entry_dir(tmp_path, "wf", "kept", "v", {"tweet": "f9", "state": "f2"})
    assert a == b != c


def test_results_root_from_argument_or_data_dir(tmp_path: Path) -> None:
    assert rm.results_root(tmp_path) == tmp_path
    assert rm.results_root("/x") == Path("/x")  # SPARKPROV_RESULTS_PATH: CaptureSettings
    default = rm.results_root("")
    assert default.name == "results" and "sparkprov" in str(default)


def test_changed_missing_or_extra_files_are_damage(tmp_path: Path) -> None:
    entry, stored = _stored(tmp_path, tmp_path)
    part = entry / stored.data / "part-0.parquet"
    original = part.read_bytes()
    part.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    assert "changed ['part-0.parquet']" in (rm.damage(entry, stored) or "")
    part.write_bytes(original)
    (entry / stored.data / "part-1.parquet").write_bytes(original)
    assert "extra ['part-1.parquet']" in (rm.damage(entry, stored) or "")
    (entry / stored.data / "part-1.parquet").unlink()
    part.unlink()
    assert "missing ['part-0.parquet']" in (rm.damage(entry, stored) or "")
    rm.remove(entry / stored.data)
    assert "is missing" in (rm.damage(entry, stored) or "")


def test_row_count_and_footer_are_checked(tmp_path: Path) -> None:
    entry, stored = _stored(tmp_path, tmp_path, rows=4)
    assert "3 rows stored, the manifest says 4" in (rm.damage(entry, stored) or "")
    part = entry / stored.data / "part-0.parquet"
    part.write_bytes(b"garbage")
    relabelled = StoredResult(**{**stored.__dict__, "files": rm.file_digests(part.parent)})
    assert "parquet unreadable" in (rm.damage(entry, relabelled) or "")


def test_unreadable_or_foreign_manifests_are_skipped(tmp_path: Path) -> None:
    entry, stored = _stored(tmp_path, tmp_path)
    (entry / "manifest.json").write_text("{not json")
    assert rm.candidates(tmp_path, "wf/1", "kept") == []
    (entry / "manifest.json").write_text(stored.to_json().replace('"format": 1', '"format": 7'))
    assert rm.candidates(tmp_path, "wf/1", "kept") == []
    rm.write_manifest(entry, StoredResult(**{**stored.__dict__, "sink": "other"}))
    assert rm.candidates(tmp_path, "wf/1", "kept") == []
    with pytest.raises(ValueError, match="bad data folder"):
        StoredResult.from_json(StoredResult(**{**stored.__dict__, "data": ".."}).to_json())
