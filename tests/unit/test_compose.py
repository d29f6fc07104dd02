"""docker-compose.yml cannot run here (no Docker engine): check it against our settings and the
local stack's."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from localstack import Stack, StackSettings
from localstack.neo4j_config import SETTINGS, Neo4jConfig, docker_env_name, size_bytes
from sparkprov import defaults

ROOT = Path(__file__).resolve().parents[2]
KNOWN = {v for k, v in vars(defaults).items() if k.startswith("ENV_")}


def _settings_read_by(package: str) -> set[str]:
    names = set()
    for path in (ROOT / package).glob("*.py"):
        names |= set(re.findall(r'"(SPARKPROV_[A-Z_]+)"', path.read_text()))
    return names | {
        v
        for k, v in vars(defaults).items()
        if k.startswith("ENV_")
        if k in (ROOT / package / "settings.py").read_text()
    }


def test_compose_services_images_and_healthchecks() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"kafka", "neo4j-plugin", "neo4j", "ingest", "query", "viewer"}
    assert services["neo4j"]["image"] == "neo4j:5.26-community"
    assert services["kafka"]["image"].startswith("apache/kafka:")
    for name, service in services.items():
        if name != "neo4j-plugin":  # a one-shot build: it exits, it is not healthy
            assert "healthcheck" in service, name


def test_compose_neo4j_loads_our_procedures() -> None:
    """Ingest calls sparkprov.write: the jar the plugin build writes must land in /plugins."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    build, neo4j = services["neo4j-plugin"], services["neo4j"]
    assert build["image"].startswith("maven:")
    assert neo4j["depends_on"]["neo4j-plugin"]["condition"] == "service_completed_successfully"
    out = next(v.split(":")[0] for v in build["volumes"] if v.endswith(":/out/plugins"))
    assert f"{out}:/plugins" in neo4j["volumes"]
    src, mounted = next(v.split(":")[:2] for v in build["volumes"] if "/src/neo4j_plugin" in v)
    assert (ROOT / src / "pom.xml").exists()
    assert (ROOT / src / "src/main/java/io/sparkprov/plugin/write/Ingest.java").exists()
    script = build["command"][-1]
    assert f"-f {mounted}/pom.xml package" in script
    assert "-Dstack.dir=/out" in script
    for name in ("ingest", "query", "viewer"):
        assert services[name]["build"] == "."
        depends = services[name]["depends_on"]
        assert all(d["condition"] == "service_healthy" for d in depends.values())
    assert (ROOT / "Dockerfile").exists()


def test_compose_uses_only_settings_the_services_read() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name in ("ingest", "query", "viewer"):
        env = set(compose["services"][name]["environment"])
        package = "viewer" if name == "viewer" else f"{name}_service"
        read = _settings_read_by(package)
        unknown = env - read
        assert not unknown, f"{name} is given settings it never reads: {unknown}"
    ingest_env = compose["services"]["ingest"]["environment"]
    assert ingest_env["SPARKPROV_NEO4J_URI"] == "bolt://neo4j:7687"
    assert compose["services"]["query"]["environment"]["SPARKPROV_GRPC_ADDR"].endswith(":50051")


_INTERPOLATION = re.compile(r"^\$\{(SPARKPROV_[A-Z0-9_]+):-(.+)\}$")


def test_compose_and_local_stack_give_neo4j_the_same_settings(tmp_path: Path) -> None:
    """Every write-relevant Neo4j setting: same variable, same default in both places; the local
    stack hands the database settings to its launcher (neo4j.conf) and the heap to the JVM."""
    env = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["neo4j"][
        "environment"
    ]
    neo4j_env = {k: v for k, v in env.items() if k != "NEO4J_AUTH"}
    assert set(neo4j_env) == {docker_env_name(s.neo4j) for s in SETTINGS}
    local = Neo4jConfig.from_env({})
    for setting in SETTINGS:
        match = _INTERPOLATION.match(neo4j_env[docker_env_name(setting.neo4j)])
        assert match, f"{setting.neo4j}: compose must read ${{{setting.env}:-default}}"
        assert match.group(1) == setting.env
        assert match.group(2) == local.values()[setting.neo4j], setting.neo4j

    for sub in ("lib/neo4j", "plugins"):
        (tmp_path / sub).mkdir(parents=True)
    stack = Stack(StackSettings.from_env(tmp_path, {}))
    stack._neo4j_prepare()
    conf = dict(
        line.split("=", 1) for line in (tmp_path / "neo4j" / "neo4j.conf").read_text().splitlines()
    )
    command = stack._neo4j_command()
    assert command[-1] == str(tmp_path / "neo4j" / "neo4j.conf")
    for setting in SETTINGS:
        value = local.values()[setting.neo4j]
        if setting.neo4j.startswith("server.memory.heap."):
            flag = "-Xms" if setting.neo4j.endswith("initial_size") else "-Xmx"
            assert f"{flag}{size_bytes(value) // 1024}k" in command
            assert setting.neo4j not in conf  # the embedded database does not size its JVM
        else:
            assert conf[setting.neo4j] == value


def test_neo4j_settings_follow_the_environment_and_keep_logs_bounded() -> None:
    assert {s.field for s in SETTINGS} == {f.name for f in dataclasses.fields(Neo4jConfig)}
    names = {s.neo4j for s in SETTINGS}
    assert {
        "server.memory.pagecache.size",
        "server.memory.heap.max_size",
        "db.tx_log.rotation.retention_policy",
        "db.tx_log.rotation.size",
    } <= names
    # Neo4j's default ("2 days") keeps every log of a load; only a size or file count bounds it.
    retention = Neo4jConfig().tx_log_retention
    assert re.fullmatch(r"\d+[KMG]? (size|files)", retention), retention
    custom = Neo4jConfig.from_env(
        {"SPARKPROV_NEO4J_TX_LOG_RETENTION": "2 files", "SPARKPROV_NEO4J_HEAP_MAX": "3g"}
    )
    assert custom.values()["db.tx_log.rotation.retention_policy"] == "2 files"
    assert "db.tx_log.rotation.retention_policy=2 files\n" in custom.conf_text()
    assert custom.jvm_heap_flags()[1] == f"-Xmx{3 * 1024 * 1024}k"
    # A maximum set below the initial size lowers it with it (a JVM refuses -Xms over -Xmx).
    assert Neo4jConfig.from_env({"SPARKPROV_NEO4J_HEAP_MAX": "256M"}).jvm_heap_flags() == [
        f"-Xms{256 * 1024}k",
        f"-Xmx{256 * 1024}k",
    ]
    with pytest.raises(ValueError, match="not a size"):
        Neo4jConfig.from_env({"SPARKPROV_NEO4J_PAGECACHE": "lots"})


_REQUIRED = re.compile(r"\$\{(SPARKPROV_[A-Z0-9_]+):\?[^}]+\}")
_SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|AUTH")


def test_compose_neo4j_requires_the_password_the_services_are_given() -> None:
    """Neo4j runs with auth; its password and the services' come from one required variable
    (no default, so compose refuses to start without it), and the user is the one Neo4j has."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    auth = services["neo4j"]["environment"]["NEO4J_AUTH"]
    user, _, password = auth.partition("/")
    assert auth != "none" and user == "neo4j"
    match = _REQUIRED.fullmatch(password)
    assert match and match.group(1) == defaults.ENV_NEO4J_PASSWORD, auth
    for name in ("ingest", "query"):
        env = services[name]["environment"]
        assert env[defaults.ENV_NEO4J_USER] == user, name
        given = _REQUIRED.fullmatch(env[defaults.ENV_NEO4J_PASSWORD])
        assert given and given.group(1) == defaults.ENV_NEO4J_PASSWORD, name
    # The healthcheck must log in too, with the container's own setting, not a copy.
    check = " ".join(services["neo4j"]["healthcheck"]["test"])
    assert "cypher-shell -u neo4j" in check and "$${NEO4J_AUTH#*/}" in check


def test_compose_holds_no_password_literal() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    compose = yaml.safe_load(text)
    for name, service in compose["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if _SECRET_NAME.search(key):
                secret = str(value).removeprefix("neo4j/") if key == "NEO4J_AUTH" else str(value)
                assert _REQUIRED.fullmatch(secret), f"{name}.{key} must be ${{VAR:?message}}"
    # No default for any secret variable anywhere in the file (a ${VAR:-default} would be one).
    assert not re.search(r"\$\{SPARKPROV_[A-Z_]*(PASSWORD|TOKEN|SECRET)[A-Z_]*:?-", text)
    # The example env file names the variable and leaves its value for the operator.
    example = dict(
        line.split("=", 1)
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert example == {defaults.ENV_NEO4J_PASSWORD: ""}
    assert ".env" in (ROOT / ".gitignore").read_text().splitlines()


def test_compose_kafka_keeps_its_log_on_a_volume() -> None:
    """Lineage not ingested yet survives recreating the Kafka container: the log directory the
    broker is told to use is a named volume, and the cluster id is fixed, so a restarted broker
    finds its own formatted log."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    kafka = compose["services"]["kafka"]
    log_dir = kafka["environment"]["KAFKA_LOG_DIRS"]
    mounts = dict(v.split(":", 1) for v in kafka["volumes"])
    assert {target: source for source, target in mounts.items()}[log_dir] in compose["volumes"]
    assert len(kafka["environment"]["CLUSTER_ID"]) == 22  # base64 of a UUID, as KRaft wants
