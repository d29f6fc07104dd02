"""SPARKPROV_NEO4J_DATABASE on the real Neo4j: both services read it, and every query of their
stores goes to that database (a database that does not exist is named in Neo4j's refusal;
`neo4j`, Community's one, answers)."""

from __future__ import annotations

import neo4j
import pytest

from ingest_service.settings import IngestSettings
from ingest_service.store import Store as IngestStore
from query_service.settings import QuerySettings
from query_service.store import Store as QueryStore
from sparkprov import defaults


def test_both_services_use_the_configured_database(stack) -> None:  # type: ignore[no-untyped-def]
    uri = stack.settings.neo4j_uri
    env = {defaults.ENV_NEO4J_URI: uri, defaults.ENV_NEO4J_DATABASE: "nosuchdb"}
    ingest, query = IngestSettings.from_env(env), QuerySettings.from_env(env)
    assert ingest.neo4j_database == query.neo4j_database == "nosuchdb"
    refused = QueryStore.connect(uri, database=query.neo4j_database)
    try:
        with pytest.raises(neo4j.exceptions.ClientError, match="nosuchdb"):
            refused.runs("")
    finally:
        refused.close()
    writer = IngestStore.connect(uri, database=ingest.neo4j_database)
    try:
        with pytest.raises(neo4j.exceptions.ClientError, match="nosuchdb"):
            writer.driver.execute_query("RETURN 1")
    finally:
        writer.close()
    home = QueryStore.connect(uri, database="neo4j")
    try:
        assert isinstance(home.runs(""), list)
    finally:
        home.close()
