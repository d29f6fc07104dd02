"""The one schema file (sparkprov/schema.cypher) as ingest reads it: every statement idempotent,
each index and constraint named once, and the ones the queries rely on present."""

from __future__ import annotations

import re

from ingest_service.store import SCHEMA
from sparkprov import schema


def test_ingest_runs_exactly_the_files_statements() -> None:
    assert schema.statements() == SCHEMA
    assert len(SCHEMA) >= 20


def test_every_statement_is_idempotent_and_named_once() -> None:
    names = []
    for statement in schema.statements():
        assert ";" not in statement and "//" not in statement, statement
        if statement.startswith(("MERGE ", "MATCH ")):
            continue  # the id barrier's row and a backfill: data statements, idempotent
        match = re.match(r"(CREATE|DROP) (CONSTRAINT|INDEX) (\w+) IF (NOT )?EXISTS", statement)
        assert match, statement
        names.append(match.group(3))
    assert len(names) == len(set(names)), names


def test_the_indexes_reads_rely_on_are_there() -> None:
    text = " ".join(schema.statements())
    # node ids are unique; member edges are looked up by pair; FindNodes by run and relation
    for name in ("sp_node_id", "sp_member_pair", "sp_node_relation", "sp_run_id"):
        assert f" {name} " in text, name
