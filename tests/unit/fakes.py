"""What several unit tests of the ingest consumer's parts share: a Kafka record as kafka-python
hands it over (the fields ingest_service.clients.Record reads)."""

from __future__ import annotations

from typing import NamedTuple


class Rec(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
