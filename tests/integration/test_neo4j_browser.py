"""Neo4j Browser and the HTTP API on the local stack, as the official image serves them: the
embedded Neo4j's HTTP connector answers at SPARKPROV_NEO4J_HTTP_ADDR (default 127.0.0.1:7474)
with the browser app at /browser/, a discovery document that points the browser at our Bolt
port, and the transactional Cypher endpoint."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def _get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback
        return response.status, response.headers.get("Content-Type", ""), response.read().decode()


def test_serves_neo4j_browser(stack) -> None:  # type: ignore[no-untyped-def]
    base = f"http://{stack.settings.neo4j_http_addr}"
    status, kind, page = _get(f"{base}/browser/")
    assert status == 200 and kind.startswith("text/html")
    assert "<title>Neo4j Browser</title>" in page
    # The app's own script is served too (not only its shell page).
    script = re.search(r'<script[^>]+src="([^"]+\.js)"', page)
    assert script is not None
    status, kind, body = _get(f"{base}/browser/{script.group(1).lstrip('./')}")
    assert status == 200 and "javascript" in kind and len(body) > 10_000


def test_discovery_points_the_browser_at_our_bolt_port(stack) -> None:  # type: ignore[no-untyped-def]
    _, _, body = _get(f"http://{stack.settings.neo4j_http_addr}/")
    discovery = json.loads(body)
    bolt = stack.settings.neo4j_uri.split("://", 1)[1]
    assert discovery["bolt_direct"] == f"bolt://{bolt}"
    assert discovery["neo4j_version"].startswith("5.26")


def _cypher(stack: Any, statement: str, parameters: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"http://{stack.settings.neo4j_http_addr}/db/neo4j/tx/commit",
        data=json.dumps(
            {"statements": [{"statement": statement, "parameters": parameters}]}
        ).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_transactional_endpoint_answers_cypher(stack, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    with neo4j_driver.session() as session:
        expected = session.run("MATCH (n) RETURN count(n) AS n").single()["n"]
    answer = _cypher(stack, "MATCH (n) RETURN count(n) AS n, $word AS word", {"word": "prov"})
    assert answer["errors"] == []
    (result,) = answer["results"]
    assert result["columns"] == ["n", "word"]
    # Bolt and HTTP read the same database (nothing writes between the two reads in this test
    # module's stack unless ingest is busy, hence >=).
    assert result["data"][0]["row"][0] >= expected
    assert result["data"][0]["row"][1] == "prov"

    bad = _cypher(stack, "MATCH (n RETURN n", {})
    assert bad["errors"] and bad["errors"][0]["code"].startswith("Neo.ClientError.Statement")
