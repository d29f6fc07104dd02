"""The trace viewer: a small web app in front of the query service's gRPC API.

``python -m viewer`` serves, on ``SPARKPROV_VIEWER_ADDR`` (default 127.0.0.1:8090), a static page
(``static/``, with cytoscape.js and its dagre layout vendored by ``make setup``) and a JSON API
(``/api/...``) that calls ``sparkprov.v1.ProvenanceQuery`` on ``SPARKPROV_GRPC_ADDR``. With
``SPARKPROV_QUERY_TOKEN`` set, the API asks for the same bearer token as the query service and
passes it on. The page opens on ``#run=RUN`` or ``#node=NODE_ID``.
"""
