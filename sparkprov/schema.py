"""The stored graph's constraints and indexes: the statements of ``sparkprov/schema.cypher``.

That file is the one definition: ingest runs its statements at startup
(``ingest_service.store.SCHEMA``) and the Neo4j plugin's tests run the same file on their embedded
database (``neo4j_plugin``, ``EmbeddedNeo4j.java``, which reads it with the same rules). It ships
inside the package (pyproject's package data), so an installed ingest service finds it.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["FILE", "statements"]

FILE = "schema.cypher"


def statements() -> list[str]:
    """The file's statements, in order: lines starting with ``//`` are comments, and statements
    end with ``;`` (a statement may span lines)."""
    text = resources.files(__package__).joinpath(FILE).read_text(encoding="utf-8")
    kept = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return [statement.strip() for statement in kept.split(";") if statement.strip()]
