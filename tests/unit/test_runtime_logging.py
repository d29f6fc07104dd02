"""The services' logging: kafka-python's errors about a connection closed on purpose are
dropped, every other error of the library still shows."""

from __future__ import annotations

import logging

import pytest

from sparkprov.runtime import configure_logging


class _Transport:
    """Stands for a kafka-python transport in a log record's arguments (its str is all the
    record keeps)."""

    def __init__(self, closed: bool) -> None:
        self.closed = closed

    def __str__(self) -> str:
        return "<KafkaTCPTransport [none] (closed)>" if self.closed else "<KafkaTCPTransport 1>"


@pytest.mark.parametrize(("closed", "shown"), [(True, False), (False, True)])
def test_an_error_on_a_closed_kafka_connection_is_not_logged(
    caplog: pytest.LogCaptureFixture, closed: bool, shown: bool
) -> None:
    configure_logging()
    try:
        raise AttributeError("'NoneType' object has no attribute 'recv'")
    except AttributeError:
        with caplog.at_level(logging.WARNING):
            logging.getLogger("kafka.net.transport").exception(
                "%s: Error receiving network data closing socket", _Transport(closed)
            )
    assert bool(caplog.records) is shown
