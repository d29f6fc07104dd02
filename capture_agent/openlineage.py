"""OpenLineage run events of a :class:`~capture_agent.session.ProvenanceSession`, so a team on
Marquez or DataHub can go from a job to its row-level provenance.

One interface, :class:`RunEvents` (``start``, ``complete``, ``fail``, ``close``), two
implementations: :class:`NoopRunEvents` when OpenLineage is off (the default) and
:class:`OpenLineageRunEvents`, which emits through the openlineage-python client and whatever
transport it is configured with (http, kafka, file, console; ``OPENLINEAGE_URL``,
``OPENLINEAGE_CONFIG``, ``openlineage.yml``, ``OPENLINEAGE__TRANSPORT__*``;
``OPENLINEAGE_DISABLED=true`` still turns it into the client's own no-op). :func:`run_events`
picks one: on when ``openlineage=True`` or a client is passed, or, when not given, when
``OPENLINEAGE_URL`` / ``OPENLINEAGE_CONFIG`` is set or ``SPARKPROV_OPENLINEAGE=1``.

Each run sends START when the session's block is entered and COMPLETE or FAIL (with an
``errorMessage`` facet) when it is left. The job is ``(namespace, workflow)``; inputs are the
relations the run read (sources, module state), outputs the relations it named (``.named``,
module outputs), each a dataset ``(namespace, "<workflow>.<relation>")``. Every event carries
the custom run facet ``sparkprov``: the sparkprov run id and the query service's address (the
OpenLineage run id is the sparkprov run id when that is a UUID, else a UUID derived from it).

Emission never fails the job: a transport error is logged as a warning and counted
(``failed_events``).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import attr

from sparkprov import defaults

__all__ = [
    "DEFAULT_NAMESPACE",
    "NoopRunEvents",
    "OpenLineageRunEvents",
    "RunEvents",
    "facet_class",
    "openlineage_run_id",
    "run_events",
]

log = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "sparkprov"
_PRODUCER = "https://github.com/sparkprov/sparkprov"
_FACET_SCHEMA = "https://sparkprov.dev/spec/facets/1-0-0/SparkprovRunFacet.json"


class RunEvents(Protocol):
    def start(self) -> None: ...

    def complete(self, inputs: Sequence[str], outputs: Sequence[str]) -> None: ...

    def fail(self, inputs: Sequence[str], outputs: Sequence[str], error: str) -> None: ...

    def close(self) -> None: ...


class NoopRunEvents:
    """OpenLineage off: nothing is imported, nothing is sent."""

    def start(self) -> None:
        pass

    def complete(self, inputs: Sequence[str], outputs: Sequence[str]) -> None:
        pass

    def fail(self, inputs: Sequence[str], outputs: Sequence[str], error: str) -> None:
        pass

    def close(self) -> None:
        pass


def openlineage_run_id(run_id: str) -> str:
    """OpenLineage wants a UUID: the run id itself when it is one, else one derived from it."""
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sparkprov:run:{run_id}"))


@functools.cache
def facet_class() -> type[Any]:
    """The ``sparkprov`` run facet's class, an OpenLineage ``RunFacet``; built on first use, so
    nothing of openlineage is imported while it is off."""
    from openlineage.client.generated.base import RunFacet

    @attr.define
    class SparkprovRunFacet(RunFacet):
        """Where the run's row-level provenance is: ``runId`` in sparkprov's query service at
        ``queryAddress`` (gRPC ``sparkprov.v1.ProvenanceQuery``)."""

        runId: str = attr.field()  # noqa: N815 - OpenLineage's camelCase
        queryAddress: str = attr.field()  # noqa: N815
        workflow: str = attr.field()

        @staticmethod
        def _get_schema() -> str:
            return _FACET_SCHEMA

    return SparkprovRunFacet


class OpenLineageRunEvents:
    def __init__(
        self,
        client: Any,
        *,
        run_id: str,
        workflow: str,
        query_address: str,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> None:
        self._client = client
        self.run_id = run_id
        self.workflow = workflow
        self.query_address = query_address
        self.namespace = namespace
        self.failed_events = 0
        self._facet = facet_class()(
            runId=run_id, queryAddress=query_address, workflow=workflow, producer=_PRODUCER
        )

    def start(self) -> None:
        self._emit("START", (), ())

    def complete(self, inputs: Sequence[str], outputs: Sequence[str]) -> None:
        self._emit("COMPLETE", inputs, outputs)

    def fail(self, inputs: Sequence[str], outputs: Sequence[str], error: str) -> None:
        from openlineage.client.generated.error_message_run import ErrorMessageRunFacet

        facet = ErrorMessageRunFacet(message=error, programmingLanguage="PYTHON")
        self._emit("FAIL", inputs, outputs, {"errorMessage": facet})

    def close(self) -> None:
        try:
            self._client.close()
        except Exception as e:  # the job is done; a transport that cannot flush is reported
            log.warning("OpenLineage client did not close cleanly: %s", e)

    def _emit(
        self,
        state: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        from openlineage.client.event_v2 import (
            InputDataset,
            Job,
            OutputDataset,
            Run,
            RunEvent,
            RunState,
        )

        facets: dict[str, Any] = {"sparkprov": self._facet, **(extra or {})}
        event = RunEvent(
            eventType=RunState[state],
            eventTime=datetime.now(UTC).isoformat(),
            run=Run(runId=openlineage_run_id(self.run_id), facets=facets),
            job=Job(namespace=self.namespace, name=self.workflow),
            inputs=[InputDataset(self.namespace, self._dataset(r)) for r in inputs],
            outputs=[OutputDataset(self.namespace, self._dataset(r)) for r in outputs],
            producer=_PRODUCER,
        )
        try:
            self._client.emit(event)
        except Exception as e:  # lineage for a catalog must not fail the Spark job
            self.failed_events += 1
            log.warning(
                "OpenLineage %s event of run %s not sent (%d failed so far): %s",
                state,
                self.run_id,
                self.failed_events,
                e,
            )

    def _dataset(self, relation: str) -> str:
        return f"{self.workflow}.{relation}"


def run_events(
    openlineage: bool | Any | None,
    *,
    run_id: str,
    workflow: str,
    environ: Mapping[str, str],
    namespace: str = DEFAULT_NAMESPACE,
) -> RunEvents:
    """The run's events: ``openlineage`` is ``False`` (off), ``True`` (the client configured by
    its own files and environment), an ``OpenLineageClient`` to use, or ``None`` (on when the
    environment configures OpenLineage, see the module's docstring)."""
    if openlineage is None:
        openlineage = bool(
            environ.get("OPENLINEAGE_URL")
            or environ.get("OPENLINEAGE_CONFIG")
            or defaults.is_on(environ.get(defaults.ENV_OPENLINEAGE))
        )
    if openlineage is False:
        return NoopRunEvents()
    if openlineage is True:
        from openlineage.client import OpenLineageClient

        openlineage = OpenLineageClient()
    address = environ.get(defaults.ENV_GRPC_ADDR) or defaults.GRPC_ADDR
    return OpenLineageRunEvents(
        openlineage, run_id=run_id, workflow=workflow, query_address=address, namespace=namespace
    )
