"""Stored sink results on disk: where they live, what their manifest says, whether they are intact.

A sink result is stored under the results path, keyed by workflow, sink (the named relation),
the canonical id of the sink's sub-DAG (its ``version``) and the fingerprints of the sources it
reads::

    <root>/<workflow>/<sink>/<version>-<sources>/manifest.json
    <root>/<workflow>/<sink>/<version>-<sources>/data-<run id>/part-*.parquet

(workflow and sink percent-encoded, ``sources`` a short hash of the source fingerprints). The
manifest (:class:`StoredResult`) names the run that computed the result, its row count and
schema, the source fingerprints, the sink's sub-DAG (so an equivalence check needs nothing
else) and a SHA-256 of every data file. It is written last and atomically, once the run that
computed it finished: a directory without one is unfinished and never read. A manifest that
cannot be parsed, or whose data files are missing, extra or changed, is damaged: the caller
recomputes (:func:`damage` says why). Pure Python and pyarrow: no Spark here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq

from capture_agent.settings import ENV_RESULTS_PATH
from sparkprov.workflow import WorkflowDag

__all__ = [
    "ENV_RESULTS_PATH",
    "FORMAT",
    "StoredResult",
    "candidates",
    "damage",
    "data_files",
    "entry_dir",
    "file_digests",
    "parquet_rows",
    "remove",
    "results_root",
    "sources_key",
    "write_manifest",
]

log = logging.getLogger(__name__)

FORMAT = 1  # bumped when the layout or the manifest changes; other formats are not read
MANIFEST = "manifest.json"


def results_root(path: str | os.PathLike[str] | None) -> Path:
    """The results path: ``path`` if given (the session's argument, else
    ``SPARKPROV_RESULTS_PATH``: capture_agent.settings), else ``results`` under the user's data
    directory (platformdirs: ``~/.local/share/sparkprov`` on Linux)."""
    if path:
        return Path(path)
    import platformdirs

    return Path(platformdirs.user_data_dir("sparkprov")) / "results"


def sources_key(sources: Mapping[str, str]) -> str:
    """A short hash of the source fingerprints (relation -> fingerprint)."""
    text = json.dumps(dict(sorted(sources.items())), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _part(name: str) -> str:
    return quote(name, safe="") or "%00"


def entry_dir(
    root: Path, workflow: str, sink: str, version: str, sources: Mapping[str, str]
) -> Path:
    return root / _part(workflow) / _part(sink) / f"{version}-{sources_key(sources)}"


@dataclass(frozen=True)
class StoredResult:
    """The manifest of one stored sink result."""

    workflow: str
    sink: str
    version: str  # the canonical id of the sink's sub-DAG (sparkprov.workflow)
    run_id: str  # the run that computed it: its provenance is what the reusing run links to
    rows: int
    schema: tuple[tuple[str, str], ...]  # visible (name, Spark type), in order
    sources: dict[str, str]  # source relation -> fingerprint of its content
    dag: str  # the sink's sub-DAG (WorkflowDag JSON)
    data: str  # the data folder's name, inside the entry
    files: dict[str, str] = field(default_factory=dict)  # data file -> SHA-256
    created_unix_ms: int = 0

    def sub_dag(self) -> WorkflowDag:
        return WorkflowDag.from_json(self.dag)

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": FORMAT,
                "workflow": self.workflow,
                "sink": self.sink,
                "version": self.version,
                "run_id": self.run_id,
                "rows": self.rows,
                "schema": [list(c) for c in self.schema],
                "sources": self.sources,
                "dag": self.dag,
                "data": self.data,
                "files": self.files,
                "created_unix_ms": self.created_unix_ms,
            },
            sort_keys=True,
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> StoredResult:
        """Raises ValueError on anything but a manifest of this format."""
        try:
            data = json.loads(text)
            if data.get("format") != FORMAT:
                raise ValueError(f"manifest format {data.get('format')!r}, not {FORMAT}")
            data.pop("format")
            data["schema"] = tuple((str(n), str(t)) for n, t in data["schema"])
            result = cls(**data)
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as e:
            raise ValueError(f"not a manifest: {e}") from e
        if "/" in result.data or result.data in ("", ".", ".."):
            raise ValueError(f"bad data folder {result.data!r}")
        return result


def candidates(root: Path, workflow: str, sink: str) -> list[tuple[Path, StoredResult]]:
    """Every readable manifest stored for this workflow's sink, with its entry directory.
    Unreadable manifests are logged and left out."""
    base = root / _part(workflow) / _part(sink)
    if not base.is_dir():
        return []
    found = []
    for manifest in sorted(base.glob(f"*/{MANIFEST}")):
        try:
            result = StoredResult.from_json(manifest.read_text())
        except (OSError, ValueError) as e:
            log.warning("stored result %s is unreadable (%s): not reused", manifest.parent, e)
            continue
        if result.workflow != workflow or result.sink != sink:
            log.warning("stored result %s names another sink: not reused", manifest.parent)
            continue
        found.append((manifest.parent, result))
    return found


def data_files(folder: Path) -> list[Path]:
    """The data files of a stored result (Spark's _SUCCESS and .crc side files excluded)."""
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith((".", "_")))


def file_digests(folder: Path) -> dict[str, str]:
    out = {}
    for path in data_files(folder):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        out[path.name] = digest.hexdigest()
    return out


def parquet_rows(folder: Path) -> int:
    """Rows in a folder of parquet files, from their footers (no data read)."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in data_files(folder))


def damage(entry: Path, result: StoredResult) -> str | None:
    """Why the stored data cannot be trusted, or None: its folder, files and checksums must be
    exactly the manifest's, and the parquet footers must hold its row count."""
    folder = entry / result.data
    if not folder.is_dir():
        return f"data folder {folder} is missing"
    try:
        digests = file_digests(folder)
    except OSError as e:
        return f"data unreadable: {e}"
    missing = sorted(set(result.files) - set(digests))
    extra = sorted(set(digests) - set(result.files))
    changed = sorted(n for n in set(result.files) & set(digests) if result.files[n] != digests[n])
    if missing or extra or changed:
        return f"data files differ: missing {missing}, extra {extra}, changed {changed}"
    try:
        rows = parquet_rows(folder)
    except Exception as e:  # pyarrow raises several types on a bad footer
        return f"parquet unreadable: {e}"
    if rows != result.rows:
        return f"{rows} rows stored, the manifest says {result.rows}"
    return None


def write_manifest(entry: Path, result: StoredResult) -> None:
    """Writes the manifest atomically (a reader sees the old one or the new one, whole)."""
    entry.mkdir(parents=True, exist_ok=True)
    temporary = entry / f".{MANIFEST}.{result.run_id}"
    temporary.write_text(result.to_json())
    os.replace(temporary, entry / MANIFEST)


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
