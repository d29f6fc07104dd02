# The ingest and query services (one image, two commands). Built by docker-compose.yml.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proto ./proto
COPY sparkprov ./sparkprov
COPY ingest_service ./ingest_service
COPY query_service ./query_service
COPY capture_agent ./capture_agent
COPY localstack ./localstack
RUN pip install --no-cache-dir grpcio-tools \
 && python -m grpc_tools.protoc -Iproto --python_out=. --pyi_out=. --grpc_python_out=. \
      proto/sparkprov/v1/lineage.proto proto/sparkprov/v1/query.proto \
 && touch sparkprov/v1/__init__.py \
 && pip install --no-cache-dir .
RUN useradd --create-home sparkprov
USER sparkprov
