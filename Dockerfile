# The ingest and query services and the trace viewer (one image, three commands). Built by
# docker-compose.yml.

# The viewer's browser libraries, from the same lock file as `make setup`.
FROM node:20-slim AS viewer-assets
WORKDIR /web
COPY viewer/web/package.json viewer/web/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proto ./proto
COPY sparkprov ./sparkprov
COPY ingest_service ./ingest_service
COPY query_service ./query_service
COPY capture_agent ./capture_agent
COPY localstack ./localstack
COPY viewer ./viewer
COPY --from=viewer-assets /web/node_modules/cytoscape/dist/cytoscape.min.js \
     /web/node_modules/cytoscape-dagre/dist/cytoscape-dagre.min.js ./viewer/static/vendor/
RUN pip install --no-cache-dir grpcio-tools \
 && python -m grpc_tools.protoc -Iproto --python_out=. --pyi_out=. --grpc_python_out=. \
      proto/sparkprov/v1/lineage.proto proto/sparkprov/v1/query.proto \
 && touch sparkprov/v1/__init__.py \
 && pip install --no-cache-dir .
RUN useradd --create-home sparkprov
USER sparkprov
