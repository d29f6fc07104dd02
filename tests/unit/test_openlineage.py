"""capture_agent.openlineage without Spark: when events are on, the run ids OpenLineage gets, and
that a transport failure is counted and logged, never raised into the job."""

from __future__ import annotations

import uuid
from typing import Any

import openlineage.client
import pytest

from capture_agent.openlineage import (
    NoopRunEvents,
    OpenLineageRunEvents,
    openlineage_run_id,
    run_events,
)


class FailingClient:
    def __init__(self) -> None:
        self.closed = False

    def emit(self, event: Any) -> None:
        raise ConnectionError("marquez is down")

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("argument", "environ", "on"),
    [
        (None, {}, False),
        (None, {"OPENLINEAGE_URL": "http://marquez:5000"}, True),
        (None, {"OPENLINEAGE_CONFIG": "/etc/openlineage.yml"}, True),
        (None, {"SPARKPROV_OPENLINEAGE": "1"}, True),
        (None, {"SPARKPROV_OPENLINEAGE": "0"}, False),
        (False, {"OPENLINEAGE_URL": "http://marquez:5000"}, False),
    ],
)
def test_off_unless_configured(
    argument: Any, environ: dict[str, str], on: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # when on, the client is built from its own configuration: a fake stands in for it
    monkeypatch.setattr(openlineage.client, "OpenLineageClient", FailingClient)
    events = run_events(argument, run_id="r", workflow="w", environ=environ)
    assert isinstance(events, OpenLineageRunEvents if on else NoopRunEvents)


def test_run_ids_are_uuids() -> None:
    hex_id = uuid.uuid4().hex
    assert openlineage_run_id(hex_id) == str(uuid.UUID(hex_id))
    derived = openlineage_run_id("nightly-2026-11-24")
    assert uuid.UUID(derived) and derived == openlineage_run_id("nightly-2026-11-24")


def test_a_transport_failure_never_reaches_the_job(caplog: pytest.LogCaptureFixture) -> None:
    client = FailingClient()
    events = run_events(client, run_id="r", workflow="w", environ={"SPARKPROV_GRPC_ADDR": "q:1"})
    assert isinstance(events, OpenLineageRunEvents) and events.query_address == "q:1"
    events.start()
    events.complete(["In"], ["Out"])
    events.fail([], [], "boom")
    events.close()
    assert events.failed_events == 3 and client.closed
    assert "marquez is down" in caplog.text
