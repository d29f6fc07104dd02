"""docker-compose.yml cannot run here (no Docker engine): check it against our settings."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

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
    assert set(services) == {"kafka", "neo4j-plugin", "neo4j", "ingest", "query"}
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
    src = next(v.split(":")[0] for v in build["volumes"] if "/src/stack/neo4j" in v)
    assert (ROOT / src / "pom.xml").exists()
    assert "-Dstack.dir=/out" in build["command"]
    for name in ("ingest", "query"):
        assert services[name]["build"] == "."
        depends = services[name]["depends_on"]
        assert all(d["condition"] == "service_healthy" for d in depends.values())
    assert (ROOT / "Dockerfile").exists()


def test_compose_uses_only_settings_the_services_read() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name in ("ingest", "query"):
        env = set(compose["services"][name]["environment"])
        package = f"{name}_service"
        read = _settings_read_by(package)
        unknown = env - read
        assert not unknown, f"{name} is given settings it never reads: {unknown}"
    ingest_env = compose["services"]["ingest"]["environment"]
    assert ingest_env["SPARKPROV_NEO4J_URI"] == "bolt://neo4j:7687"
    assert compose["services"]["query"]["environment"]["SPARKPROV_GRPC_ADDR"].endswith(":50051")
