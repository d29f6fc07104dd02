"""The consume loop's place in its consumer group: its Kafka consumer, the partitions the group
gave it, and a new Kafka consumer when the group silently left it out.

- kafka-python 3 calls the rebalance listener on its IO loop, inside the loop's ``poll()``: the
  ``on_revoked`` and ``on_assigned`` hooks must not block (no flush, no commit). The partitions
  held are the ones the listener gave and did not take back, not the consumer's
  ``assignment()``: after a revocation kafka-python keeps listing the partitions until the next
  assignment is applied, which may never happen.
- A member that holds no partition for ``unassigned_s`` is checked against the broker's view of
  its group; if the group left it out (kafka-python can drop an assignment without a word: see
  ``ingest_service.membership``), its Kafka consumer is closed and made again through the
  factory, logged as a warning and counted (``metrics.consumer_recreations``); ``on_replaced``
  runs first, so that nothing the old consumer returned is committed through the new one. A
  legitimately idle member (more members than partitions) is left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafka import ConsumerRebalanceListener
from kafka.errors import KafkaError

from ingest_service.clients import GroupProbe, GroupProbeFactory, Source, SourceFactory
from ingest_service.membership import Watchdog, stuck
from ingest_service.metrics import Metrics
from ingest_service.settings import IngestSettings

__all__ = ["Subscription"]

log = logging.getLogger(__name__)

Partitions = Callable[[frozenset[Any]], object]


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, revoked: Partitions, assigned: Partitions) -> None:
        self._revoked = revoked
        self._assigned = assigned

    def on_partitions_revoked(self, revoked: Any) -> None:
        self._revoked(frozenset(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._assigned(frozenset(assigned))


class Subscription:
    """Makes its Kafka consumer (``source``) and subscribes it to ``settings.topic``."""

    def __init__(
        self,
        settings: IngestSettings,
        metrics: Metrics,
        *,
        source: SourceFactory,
        group: GroupProbeFactory,
        on_revoked: Partitions,
        on_assigned: Partitions,
        on_replaced: Callable[[], object],
    ) -> None:
        self._settings = settings
        self._metrics = metrics
        self._factory = source
        self._group = group
        self._on_revoked = on_revoked
        self._on_assigned = on_assigned
        self._on_replaced = on_replaced
        self._probe: GroupProbe | None = None  # made at the first check of the membership
        self._watchdog = Watchdog(
            settings.unassigned_s, probe_every_s=min(5.0, settings.unassigned_s / 3)
        )
        self._held: frozenset[Any] = frozenset()
        self._source = source(settings)
        self._subscribe()

    @property
    def source(self) -> Source:
        """The Kafka consumer now (a new one after a recreation)."""
        return self._source

    @property
    def held(self) -> frozenset[Any]:
        """The partitions the group gave and did not take back."""
        return self._held

    def _subscribe(self) -> None:
        listener = _Listener(self._revoked, self._assigned)
        self._source.subscribe([self._settings.topic], listener=listener)

    def _revoked(self, revoked: frozenset[Any]) -> None:
        self._held = self._held - revoked
        self._on_revoked(revoked)

    def _assigned(self, assigned: frozenset[Any]) -> None:
        self._held = self._held | assigned
        log.info("assigned partitions %s", sorted(tp.partition for tp in assigned))
        self._on_assigned(assigned)

    def watch(self, now: float) -> None:
        """Recreate the Kafka consumer if it holds no partition while its group left it out."""
        held = len(self._held)
        self._metrics.assigned_partitions = held
        if not self._watchdog.due(now, held > 0):
            return
        reason = self._stuck_reason()
        unassigned_s = self._watchdog.unassigned_for(now)
        if self._watchdog.observe(now, reason) and reason is not None:
            self._recreate(reason, unassigned_s)

    def _stuck_reason(self) -> str | None:
        """Why the broker's view of the group says this member is left out; None when it is not,
        or when Kafka does not answer (a consumer made now would fare no better)."""
        try:
            if self._probe is None:
                self._probe = self._group(self._settings)
            view = self._probe.describe(self._settings.group_id, self._settings.topic)
        except Exception as e:  # noqa: BLE001 - a failed check must not stop consuming
            log.info("membership check failed (%s); trying again later", e)
            return None
        return stuck(view, self._settings.client_id)

    def _recreate(self, reason: str, unassigned_s: float) -> None:
        """Close the Kafka consumer and subscribe a new one. The new one is made first: if
        Kafka refuses, the old one stays and the watchdog tries again after a longer bound."""
        settings = self._settings
        try:
            fresh = self._factory(settings)
        except KafkaError as e:
            log.warning("recreating the Kafka consumer failed (%s); trying again later", e)
            return
        self._metrics.consumer_recreations += 1
        log.warning(
            "kafka consumer recreated: event=consumer_recreated reason=%r group=%s topic=%s "
            "client_id=%s unassigned_s=%.0f recreations=%d",
            reason,
            settings.group_id,
            settings.topic,
            settings.client_id,
            unassigned_s,
            self._metrics.consumer_recreations,
            extra={
                "event": "consumer_recreated",
                "reason": reason,
                "group": settings.group_id,
                "topic": settings.topic,
                "unassigned_s": unassigned_s,
            },
        )
        self._on_replaced()
        old, self._source = self._source, fresh
        self._held = frozenset()
        try:
            old.close(autocommit=False)
        except Exception:  # noqa: BLE001 - the old consumer is given up either way
            log.warning("closing the replaced Kafka consumer failed", exc_info=True)
        self._subscribe()

    def close(self) -> None:
        """Close the Kafka consumer without committing, and the probe if one was made."""
        self._source.close(autocommit=False)
        if self._probe is not None:
            self._probe.close()
