# sparkprov: `make help` lists the entry points.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON_BOOT ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK_DIR ?= .stack
PROTOS := $(wildcard proto/sparkprov/v1/*.proto)
# Maven runs take turns on ~/.m2 (concurrent runs on one local repository are not safe), with
# each other and with any other checkout's on this machine: the steps of setup run side by side.
MVN := flock /tmp/sparkprov-mvn.lock mvn -q -B
CAPTURE_JVM := capture_jar
CAPTURE_JAR := capture_agent/jars/sparkprov-capture.jar

VIEWER_VENDOR := viewer/static/vendor

# setup's steps (the venv, Maven's builds, npm, Chromium) depend on one another only where their
# rules say so: run them side by side (CI's `make test` spends minutes in them otherwise).
MAKEFLAGS += --jobs=4
CHROMIUM := /usr/bin/chromium

.PHONY: help setup up down status demo test test-unit lint typecheck bench clean browser

help: ## list the entry points
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: $(VENV)/.installed sparkprov/v1/query_pb2_grpc.py $(STACK_DIR)/lib/kafka/.fetched $(STACK_DIR)/lib/neo4j/.fetched $(STACK_DIR)/lib/openlineage/.fetched $(CAPTURE_JAR) $(VIEWER_VENDOR)/.vendored ## venv, stubs, Kafka and Neo4j jars, the capture jar, the viewer's JS (idempotent)

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@

sparkprov/v1/query_pb2_grpc.py: $(PROTOS) $(VENV)/.installed
	@mkdir -p sparkprov/v1
	$(PY) -m grpc_tools.protoc -Iproto --python_out=. --pyi_out=. --grpc_python_out=. $(PROTOS)
	@touch sparkprov/v1/__init__.py

# The capture agent's JVM taps (capture_jar/, JUnit tests included), with Kafka's client and
# protobuf shaded in: ProvenanceSession adds it to the running SparkContext.
$(CAPTURE_JAR): $(CAPTURE_JVM)/pom.xml $(shell find $(CAPTURE_JVM)/src java_shared/src -name '*.java' 2>/dev/null) $(PROTOS)
	$(MVN) -f $(CAPTURE_JVM)/pom.xml package -Dbuild.dir=$(abspath $(STACK_DIR))/build/capture-jvm
	@touch $@

# The trace viewer's browser libraries (cytoscape.js, its dagre layout), pinned by
# viewer/web/package-lock.json, copied into the served, git-ignored vendor folder.
$(VIEWER_VENDOR)/.vendored: viewer/web/package.json viewer/web/package-lock.json
	cd viewer/web && npm ci --no-audit --no-fund --loglevel=error
	@mkdir -p $(VIEWER_VENDOR)
	cp viewer/web/node_modules/cytoscape/dist/cytoscape.min.js \
		viewer/web/node_modules/cytoscape-dagre/dist/cytoscape-dagre.min.js $(VIEWER_VENDOR)/
	cp viewer/web/node_modules/cytoscape/LICENSE $(VIEWER_VENDOR)/cytoscape.LICENSE
	cp viewer/web/node_modules/cytoscape-dagre/LICENSE $(VIEWER_VENDOR)/cytoscape-dagre.LICENSE
	@touch $@

# Debian's Chromium for the viewer's browser test (Playwright drives it; it never downloads a
# browser of its own). Installed quietly when missing: CI starts on a fresh machine.
$(CHROMIUM):
	@echo "installing chromium (Debian) for the browser test"
	@DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	@DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null

browser: $(CHROMIUM) ## Debian's Chromium, for the viewer's browser test

# openlineage-spark, for the test that runs it beside capture and compares dataset names.
$(STACK_DIR)/lib/openlineage/.fetched: jars/openlineage/pom.xml
	$(MVN) -f jars/openlineage/pom.xml dependency:copy-dependencies -Dstack.dir=$(abspath $(STACK_DIR))
	@touch $@

$(STACK_DIR)/lib/kafka/.fetched: jars/kafka/pom.xml
	$(MVN) -f jars/kafka/pom.xml dependency:copy-dependencies -Dstack.dir=$(abspath $(STACK_DIR))
	@touch $@

# The local Neo4j: its jars and launcher (jars/neo4j), and our plugin (neo4j_plugin: the
# procedures both services call, sparkprov.write, .index, .trace, ...; its `package` runs its
# JUnit tests on sparkprov/schema.cypher and compiles against Java generated from proto/), both
# into plugins/.
PLUGIN := neo4j_plugin
NEO4J_SOURCES := jars/neo4j/pom.xml $(wildcard jars/neo4j/src/main/java/io/sparkprov/stack/*.java) \
	$(PLUGIN)/pom.xml $(shell find $(PLUGIN)/src java_shared/src -type f 2>/dev/null) sparkprov/schema.cypher $(PROTOS)

$(STACK_DIR)/lib/neo4j/.fetched: $(NEO4J_SOURCES)
	@# An older build put a launcher jar here; first on the classpath, it hid the procedures.
	rm -f $(STACK_DIR)/lib/neo4j/sparkprov-neo4j*.jar
	@# The plugin's jars of older builds (one jar with the launcher, then the module's jar before
	@# its rename): a stale copy beside the new one would register every procedure a second time.
	rm -f $(STACK_DIR)/plugins/sparkprov-neo4j.jar $(STACK_DIR)/plugins/sparkprov-ingest-procedure.jar
	$(MVN) -f jars/neo4j/pom.xml package dependency:copy-dependencies -Dstack.dir=$(abspath $(STACK_DIR))
	$(MVN) -f $(PLUGIN)/pom.xml package -Dstack.dir=$(abspath $(STACK_DIR))
	@touch $@

up: setup ## start Kafka, Neo4j, ingest and query services and the viewer; returns when all are healthy
	$(PY) -m localstack up --dir $(STACK_DIR)

down: ## stop exactly the processes `make up` started
	@if [ -x $(PY) ]; then $(PY) -m localstack down --dir $(STACK_DIR); fi

status: ## health of each local process
	$(PY) -m localstack status --dir $(STACK_DIR)

demo: up ## run the example workflow under capture and print a backward trace
	$(PY) -m examples.people

test: setup $(CHROMIUM) ## the whole suite: unit and integration tests on the real stack
	$(PY) -m pytest

test-unit: setup ## unit tests only (no servers)
	$(PY) -m pytest tests/unit

lint: setup ## ruff
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: setup ## mypy --strict on our packages
	$(PY) -m mypy sparkprov capture_agent ingest_service query_service localstack viewer

bench: up ## benchmarks (not tests); results under bench/results/
	@echo "see bench/README.md"

clean: down ## remove the venv, stubs and the stack folder (data included)
	rm -rf $(VENV) sparkprov/v1 $(STACK_DIR) $(VIEWER_VENDOR) viewer/web/node_modules
