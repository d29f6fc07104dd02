"""Store.write sorts Neo4j's errors by what the consume loop does: retry what retrying can fix
(outages, transient errors, and refusals an operator must fix), dead-letter what the data caused
(RecordRejected with the status code as reason). On a fake driver."""

from __future__ import annotations

from typing import Any

import neo4j
import pytest

from ingest_service.store import (
    Flush,
    IndexCallTooLarge,
    RecordRejected,
    Store,
    StoreUnavailable,
)


class _Session:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute_write(self, work: Any, *args: Any) -> Any:
        raise self.error

    def begin_transaction(self, **kwargs: Any) -> Any:
        raise self.error


class _Driver:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def session(self) -> _Session:
        return _Session(self.error)


def _server_error(code: str, message: str = "fake") -> Exception:
    return neo4j.exceptions.Neo4jError._hydrate_neo4j(code=code, message=message)


@pytest.mark.parametrize(
    "code",
    [
        "Neo.DatabaseError.Statement.ExecutionFailed",
        "Neo.ClientError.Procedure.ProcedureCallFailed",
        "Neo.ClientError.Statement.TypeError",
        "Neo.ClientError.Schema.ConstraintValidationFailed",
    ],
)
def test_errors_the_data_causes_reject_the_record(code: str) -> None:
    error = _server_error(code, "Property value is too large to index")
    with pytest.raises(RecordRejected) as caught:
        Store(_Driver(error)).write(Flush())  # type: ignore[arg-type]
    assert caught.value.reason == f"neo4j:{code}"
    assert caught.value.detail == "Property value is too large to index"


@pytest.mark.parametrize(
    "error",
    [
        neo4j.exceptions.ServiceUnavailable("connection refused"),
        neo4j.exceptions.SessionExpired("leader gone"),
        _server_error("Neo.TransientError.Transaction.DeadlockDetected"),
        _server_error("Neo.ClientError.Cluster.NotALeader"),
        _server_error("Neo.ClientError.Security.Unauthorized"),
        _server_error("Neo.ClientError.Procedure.ProcedureNotFound"),
        _server_error("Neo.DatabaseError.General.UnknownError"),
    ],
)
def test_errors_retrying_may_fix_are_unavailability(error: Exception) -> None:
    with pytest.raises(StoreUnavailable):
        Store(_Driver(error)).write(Flush())  # type: ignore[arg-type]


class _Result(list[Any]):
    def consume(self) -> None:
        pass


class _Tx:
    def __init__(self) -> None:
        self.queries: list[str] = []

    def run(self, query: str, **params: Any) -> _Result:
        self.queries.append(query)
        return _Result()


class _RunningSession(_Session):
    def __init__(self, tx: _Tx) -> None:
        self.tx = tx

    def execute_write(self, work: Any, *args: Any) -> Any:
        return work(self.tx, *args)


def test_an_empty_write_calls_the_procedure() -> None:
    """The consumer's probe (an empty flush) must fail as the data's writes do when the procedure
    is missing or of another version, so such a refusal is taken for an outage, not poison."""
    tx = _Tx()
    driver = _Driver(RuntimeError("unused"))
    driver.session = lambda: _RunningSession(tx)  # type: ignore[method-assign]
    Store(driver).write(Flush())  # type: ignore[arg-type]
    assert any("sparkprov.write" in q for q in tx.queries)


class _FlakySession(_Session):
    """Fails with ``error`` the first ``times`` writes, then writes (returns ``result``)."""

    calls = 0

    def __init__(self, error: Exception, times: int, result: Any) -> None:
        super().__init__(error)
        self.times, self.result = times, result

    def execute_write(self, work: Any, *args: Any) -> Any:
        type(self).calls += 1
        if type(self).calls <= self.times:
            raise self.error
        return self.result


@pytest.mark.parametrize(
    "error",
    [
        _server_error(
            "Neo.ClientError.Procedure.ProcedureCallFailed",
            "Failed to invoke procedure `sparkprov.write`: Caused by: "
            "org.neo4j.kernel.DeadlockDetectedException: ForsetiClient[transactionId=179] can't "
            "acquire ExclusiveLock ... "
            "{neo4j_code: Neo.TransientError.Transaction.DeadlockDetected}",
        ),
        _server_error(
            "Neo.ClientError.Schema.ConstraintValidationFailed",
            "Node(12) already exists with label `Node` and property `id` = 7",
        ),
        _server_error(  # as a parallel writers' test saw it (CI, 2026-11-26)
            "Neo.ClientError.Procedure.ProcedureCallFailed",
            "Failed to invoke procedure `sparkprov.write`: Caused by: "
            "IndexEntryConflictException{propertyValues=( Long(6293765746574705761) ), "
            "addedEntityId=-1, existingEntityId=61553}",
        ),
    ],
)
def test_a_race_with_a_parallel_writer_is_written_again_not_dead_lettered(
    error: Exception,
) -> None:
    """Writers run in parallel: a deadlock detected inside the procedure (reported as the
    procedure's failure) or a node another writer created first is run again."""
    _FlakySession.calls = 0
    session = _FlakySession(error, times=2, result="written")

    class Driver:
        def session(self) -> _Session:
            return session

    assert Store(Driver()).write(Flush()) == "written"  # type: ignore[arg-type]
    assert _FlakySession.calls == 3


def test_an_index_call_refused_as_too_large_is_neither_an_outage_nor_bad_data() -> None:
    """The plugin's RefinementTooLarge, wrapped by Neo4j as a failed procedure call: the
    indexer calls again with fewer edges (it rejects no record)."""
    error = _server_error(
        "Neo.ClientError.Procedure.ProcedureCallFailed",
        "Failed to invoke procedure `sparkprov.index`: Caused by: ... RefinementTooLarge: "
        "sparkprov.index: the writes of this call refine 37 connected sets, whose members' "
        "edges are more than 400000 to read again; call again with fewer edges",
    )
    with pytest.raises(IndexCallTooLarge):
        Store(_Driver(error)).index(50_000)  # type: ignore[arg-type]
    other = _server_error("Neo.ClientError.Procedure.ProcedureCallFailed", "something else")
    with pytest.raises(RecordRejected):
        Store(_Driver(other)).index(50_000)  # type: ignore[arg-type]
