"""The unit suite's one ``spark`` fixture: a local SparkSession per test module, stopped after it.

A module tunes its session with module-level constants instead of a fixture of its own:
``SPARK_CORES`` (local[N], default 2) and ``SPARK_CONF`` (settings applied after creation)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    from examples.spark import local_spark

    module = request.module
    session = local_spark(
        f"sparkprov-{module.__name__.rsplit('.', 1)[-1]}", cores=getattr(module, "SPARK_CORES", 2)
    )
    for key, value in getattr(module, "SPARK_CONF", {}).items():
        session.conf.set(key, value)
    yield session
    session.stop()
