"""Shared test configuration: integration tests (tests/integration, tests/faults: both on the real
stack) are marked by folder."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.stack_fixtures"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if {"integration", "faults"} & set(Path(str(item.fspath)).parts):
            item.add_marker(pytest.mark.integration)
