"""sparkprov query service: the gRPC service ``sparkprov.v1.ProvenanceQuery`` over Neo4j."""

from query_service.server import create_server
from query_service.settings import QuerySettings

__all__ = ["QuerySettings", "create_server"]
