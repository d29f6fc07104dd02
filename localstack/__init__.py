"""The local stack: Kafka (KRaft), Neo4j, ingest and query services as local processes, no Docker.

``python -m localstack up|down|status`` (what ``make up``/``make down`` run) and the pytest session
fixtures share :class:`Stack`, so tests reuse a stack that is already up and otherwise start and
stop exactly the processes they started.
"""

from localstack.stack import Stack, StackError, StackSettings

__all__ = ["Stack", "StackError", "StackSettings"]
