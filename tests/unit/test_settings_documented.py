"""Every setting the code reads (a ``SPARKPROV_*`` name in our packages) is in the README's
settings table, by its full name or as a suffix beside its family
(``SPARKPROV_KAFKA_SASL_MECHANISM`` / ``_SASL_USERNAME``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("sparkprov", "capture_agent", "ingest_service", "query_service", "viewer", "localstack")


def _read_settings() -> set[str]:
    names: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "v1" not in path.parts:
                names |= set(re.findall(r'"(SPARKPROV_[A-Z0-9_]+)"', path.read_text()))
    return names


def _documented(name: str, table: str) -> bool:
    if f"`{name}`" in table:
        return True
    parts = name.split("_")
    return any(
        f"`_{'_'.join(parts[k:])}`" in table and f"`{'_'.join(parts[:k])}_" in table
        for k in range(2, len(parts))
    )


def test_every_setting_read_is_in_the_readme_table() -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Settings (environment variables)") :]
    table = table[: table.index("\n## ")]
    names = _read_settings()
    assert len(names) > 40  # the scan finds them
    missing = sorted(n for n in names if not _documented(n, table))
    assert not missing, f"settings read but not in the README's table: {missing}"
