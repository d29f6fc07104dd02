"""Every service entry point imports without the dev extras (the image runs ``pip install .``).

Each entry point is imported in a fresh interpreter whose ``sys.meta_path`` refuses every module
that only the ``dev`` extra installs (derived from pyproject.toml: the modules of the dev
distributions, minus any that a runtime dependency pulls in too)."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ENTRY_POINTS = [
    "ingest_service",
    "ingest_service.__main__",
    "ingest_service.reindex",
    "query_service",
    "query_service.__main__",
    "localstack",
    "localstack.__main__",
    "capture_agent",
    "viewer",
    "viewer.__main__",
    "sparkprov.cli",
    "sparkprov.prov_export",
    "capture_agent.openlineage",
]

_CHILD = """
import importlib, importlib.abc, sys

BLOCKED = set(sys.argv[2].split(","))

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ImportError(f"dev-only module {name} imported")
        return None

sys.meta_path.insert(0, Refuse())
importlib.import_module(sys.argv[1])
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
assert not loaded, loaded
try:
    import networkx  # noqa: F401
except ImportError:
    pass
else:
    raise AssertionError("the finder let networkx through")
"""


def _name(requirement: str) -> str | None:
    """The normalized distribution name of a requirement, None when only an extra needs it."""
    name, _, marker = requirement.partition(";")
    if "extra" in marker:
        return None
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", name)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else None


def _closure(names: set[str]) -> set[str]:
    """The distributions these need, transitively (the installed ones' metadata)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [n for n in map(_name, requires) if n]
    return seen


def _dev_only_modules() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = _closure({n for n in map(_name, project["dependencies"]) if n})
    # The dev distributions themselves, not what they need: pytest's packaging, say, may well be
    # installed in the image for other reasons.
    dev = {n for n in map(_name, project["optional-dependencies"]["dev"]) if n}
    modules: set[str] = set()
    for module, dists in importlib.metadata.packages_distributions().items():
        normalized = {re.sub(r"[-_.]+", "-", d).lower() for d in dists}
        if normalized & dev and not normalized & runtime:
            modules.add(module)
    return modules


def test_the_blocked_set_holds_the_dev_tools() -> None:
    # Without this, an empty set (say, a renamed extra) would make every import test pass.
    assert {"networkx", "hypothesis", "pytest", "_pytest"} <= _dev_only_modules()


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_entry_point_imports_without_dev_dependencies(module: str) -> None:
    blocked = ",".join(sorted(_dev_only_modules()))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, module, blocked],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
