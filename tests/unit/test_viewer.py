"""The trace viewer without servers: the level cut, and the HTTP API over a fake gateway (routes,
bad input, the bearer token, static files)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localstack.neo4j_config import Neo4jConfig
from viewer.api import create_server
from viewer.gateway import GatewayError
from viewer.levels import cut
from viewer.settings import ViewerSettings

# 1 <- 2 <- 3 <- 4, and 1 <- 5 (edges are parent -> child)
EDGES = [("2", "1"), ("3", "2"), ("4", "3"), ("5", "1")]


def test_cut_keeps_the_first_levels_and_marks_the_frontier() -> None:
    c = cut(["1"], EDGES, backward=True, depth=2)
    assert c.levels == {"1": 0, "2": 1, "5": 1, "3": 2}
    assert c.frontier == {"3"}  # 4 lies beyond; 5 has no parent
    whole = cut(["1"], EDGES, backward=True, depth=0)
    assert whole.levels["4"] == 3 and not whole.frontier
    forward = cut(["3"], EDGES, backward=False, depth=1)
    assert forward.levels == {"3": 0, "2": 1} and forward.frontier == {"2"}


def test_cut_measures_the_shortest_path() -> None:
    # 1 <- 2 <- 3 and 1 <- 3: 3 is one level up, not two, and nothing leads past the cut.
    c = cut(["1"], [("2", "1"), ("3", "2"), ("3", "1")], backward=True, depth=1)
    assert c.levels == {"1": 0, "2": 1, "3": 1} and not c.frontier


class FakeGateway:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def runs(self, workflow: str = "") -> list[dict[str, Any]]:
        self.calls.append(("runs", workflow))
        return [{"run_id": "r1"}]

    def find(self, run_id: str, relation: str, equals: dict[str, str], limit: int) -> Any:
        self.calls.append(("find", (run_id, relation, equals, limit)))
        if run_id == "missing":
            raise GatewayError(404, "FindNodes: NOT_FOUND: unknown run 'missing'")
        return {"nodes": [], "more": False}

    def trace(self, node_ids: Any, backward: bool, depth: int, nodes: int, zoomed: Any) -> Any:
        self.calls.append(("trace", (list(node_ids), backward, depth, nodes, list(zoomed))))
        return {"nodes": [], "edges": [], "truncated": False}

    def locate(self, node_ids: Any) -> Any:
        self.calls.append(("locate", list(node_ids)))
        return {"rows": []}

    def deletion(self, node_ids: Any, zoomed: Any) -> Any:
        self.calls.append(("deletion", (list(node_ids), list(zoomed))))
        return {"deleted": list(node_ids), "recomputed": []}


def _serve(settings: ViewerSettings) -> Iterator[tuple[str, FakeGateway]]:
    gateway = FakeGateway()
    server, port = create_server(settings, gateway)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}", gateway
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def viewer(tmp_path: Path) -> Iterator[tuple[str, FakeGateway]]:
    (tmp_path / "index.html").write_text("<title>viewer</title>")
    (tmp_path / "secret.txt").write_text("no")
    static = tmp_path / "static"
    static.mkdir()
    (static / "index.html").write_text("<title>viewer</title>")
    yield from _serve(ViewerSettings(addr="127.0.0.1:0", static_dir=static))


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - loopback
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as e:
        body, status = e.read(), e.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode()


def test_routes_pass_the_parameters_on(viewer: tuple[str, FakeGateway]) -> None:
    base, gateway = viewer
    assert _get(base + "/healthz") == (200, "ok\n")
    assert _get(base + "/")[0] == 200
    assert _get(base + "/api/runs")[1] == {"runs": [{"run_id": "r1"}]}
    assert (
        _get(base + "/api/find?run=r1&relation=AvgAge&where=City%3DNY&where=Age%3D35.0")[0] == 200
    )
    url = "/api/trace?node=7&node=8&direction=forward&depth=3&nodes=50&zoomed=dealer"
    assert _get(base + url)[0] == 200
    assert _get(base + "/api/locate?node=7&node=9")[1] == {"rows": []}
    assert gateway.calls[1:] == [
        ("find", ("r1", "AvgAge", {"City": "NY", "Age": "35.0"}, 50)),
        ("trace", (["7", "8"], False, 3, 50, ["dealer"])),
        ("locate", ["7", "9"]),
    ]
    body = json.dumps({"node_ids": ["7"], "zoomed_out": []}).encode()
    request = urllib.request.Request(base + "/api/deletion", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
        assert json.loads(response.read()) == {"deleted": ["7"], "recomputed": []}


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/api/trace", 400, "'node' is required"),
        ("/api/trace?node=1&direction=up", 400, "backward or forward"),
        ("/api/trace?node=1&depth=-1", 400, "whole number"),
        ("/api/trace?node=1&nodes=999999", 400, "exceeds the maximum 2000"),
        ("/api/find?run=r1", 400, "'relation' is required"),
        ("/api/find?run=r1&relation=X&where=City", 400, "not column=value"),
        ("/api/find?run=missing&relation=X", 404, "unknown run"),
        ("/api/locate", 400, "'node' is required"),
        ("/api/nothing", 404, "no such API"),
        ("/static/../secret.txt", 404, "no such file"),
    ],
)
def test_bad_requests_get_clear_errors(
    viewer: tuple[str, FakeGateway], path: str, status: int, message: str
) -> None:
    got_status, body = _get(viewer[0] + path)
    assert got_status == status
    assert message in body["error"]


def test_bad_deletion_bodies(viewer: tuple[str, FakeGateway]) -> None:
    for body, message in [
        (b"not json", "not JSON"),
        (b"[]", "JSON object"),
        (b'{"node_ids": []}', "non-empty list"),
        (b'{"node_ids": ["1"], "zoomed_out": "m"}', "list of module names"),
    ]:
        request = urllib.request.Request(viewer[0] + "/api/deletion", data=body, method="POST")
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request, timeout=5)  # noqa: S310
        assert error.value.code == 400
        assert message in json.loads(error.value.read())["error"]


def test_the_token_guards_the_api_but_not_health_or_config(tmp_path: Path) -> None:
    settings = ViewerSettings(addr="127.0.0.1:0", static_dir=tmp_path, token="s3cret")
    for base, _ in _serve(settings):
        assert _get(base + "/healthz")[0] == 200
        assert _get(base + "/api/config")[1]["token_required"] is True
        assert _get(base + "/api/runs")[0] == 401
        assert _get(base + "/api/runs", {"Authorization": "Bearer wrong"})[0] == 401
        assert _get(base + "/api/runs", {"Authorization": "Bearer s3cret"})[0] == 200


def test_settings_from_the_environment() -> None:
    settings = ViewerSettings.from_env(
        {"SPARKPROV_VIEWER_ADDR": "127.0.0.1:9999", "SPARKPROV_QUERY_TOKEN": "s3cret"}
    )
    assert (settings.host, settings.port, settings.token) == ("127.0.0.1", 9999, "s3cret")
    assert ViewerSettings.from_env({}).addr == "127.0.0.1:8090"
    with pytest.raises(ValueError, match="not host:port"):
        ViewerSettings(addr="8090")
    assert "s3cret" not in repr(settings)


def test_neo4j_conf_turns_on_http_and_advertises_bolt() -> None:
    text = Neo4jConfig().conf_text("127.0.0.1:7474", "127.0.0.1:27687")
    assert "server.http.enabled=true\n" in text
    assert "server.http.listen_address=127.0.0.1:7474\n" in text
    assert "server.bolt.advertised_address=127.0.0.1:27687\n" in text
    assert "server.http" not in Neo4jConfig().conf_text()


def test_make_demo_ends_with_where_to_look() -> None:
    from examples.people import where_to_look

    text = where_to_look(
        "run1",
        "-42",
        {"SPARKPROV_VIEWER_ADDR": "127.0.0.1:28090", "SPARKPROV_NEO4J_HTTP_ADDR": "h:1"},
    )
    assert "http://127.0.0.1:28090/#run=run1" in text
    assert "http://127.0.0.1:28090/#node=-42" in text
    assert "http://h:1/browser/" in text
    assert "sparkprov trace back -- -42" in text


def test_an_empty_neo4j_http_address_leaves_http_off(tmp_path: Path) -> None:
    from localstack import Stack, StackSettings

    settings = StackSettings.from_env(tmp_path, {"SPARKPROV_NEO4J_HTTP_ADDR": ""})
    assert settings.neo4j_http_addr == ""
    Stack(settings)._neo4j_prepare()  # noqa: SLF001 - the file the launcher reads
    assert "server.http" not in (tmp_path / "neo4j" / "neo4j.conf").read_text()


class FakeStub:
    """BackwardTrace over a chain 0 <- 1 <- 2 <- ... <- 9, cut where the request says."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def BackwardTrace(self, request: Any, timeout: float, metadata: Any) -> Any:  # noqa: N802
        from sparkprov.v1 import lineage_pb2, query_pb2

        self.requests.append((request, metadata))
        depth = request.max_depth or 9
        ids = [str(i) for i in range(min(depth, 9) + 1)][: request.limit]
        return query_pb2.TraceResponse(
            nodes=[query_pb2.Node(id=i, op=lineage_pb2.OP_PLUS, label="+") for i in ids],
            edges=[query_pb2.Edge(src=b, dst=a) for a, b in zip(ids, ids[1:], strict=False)],
            truncated=len(ids) == request.limit,
        )

    def FindNodes(self, request: Any, timeout: float, metadata: Any) -> Any:  # noqa: N802
        import grpc

        class Missing(grpc.RpcError):
            def code(self) -> grpc.StatusCode:
                return grpc.StatusCode.NOT_FOUND

            def details(self) -> str:
                return "unknown run 'x'"

        raise Missing()


def test_gateway_locates_source_rows_by_file_or_partition() -> None:
    from sparkprov.v1 import query_pb2
    from viewer.gateway import Gateway

    class Stub(FakeStub):
        def LocateSourceRows(self, request: Any, timeout: float, metadata: Any) -> Any:  # noqa: N802
            self.requests.append((request, metadata))
            return query_pb2.LocateSourceRowsResponse(
                rows=[
                    query_pb2.SourceRow(
                        node_id="7", relation="o", by_file=True, file="file:/o/p.parquet", row=3
                    ),
                    query_pb2.SourceRow(node_id="9", relation="n", partition=1, offset=2),
                ]
            )

    stub = Stub()
    rows = Gateway("127.0.0.1:1", stub=stub).locate(["7", "9"])["rows"]
    assert list(stub.requests[-1][0].node_ids) == ["7", "9"]
    assert rows == [
        {"node_id": "7", "relation": "o", "by_file": True, "file": "file:/o/p.parquet", "row": 3},
        {"node_id": "9", "relation": "n", "by_file": False, "partition": 1, "offset": 2},
    ]


def test_gateway_asks_one_level_more_and_returns_the_frontier() -> None:
    from viewer.gateway import Gateway

    stub = FakeStub()
    gateway = Gateway("127.0.0.1:1", token="t", stub=stub)
    trace = gateway.trace(["0"], backward=True, depth=3, max_nodes=100)
    request, metadata = stub.requests[-1]
    assert (request.max_depth, request.limit) == (4, 101)
    assert metadata == (("authorization", "Bearer t"),)
    assert [(n["id"], n["level"], n["frontier"]) for n in trace["nodes"]] == [
        ("0", 0, False),
        ("1", 1, False),
        ("2", 2, False),
        ("3", 3, True),
    ]
    assert {(e["src"], e["dst"]) for e in trace["edges"]} == {("1", "0"), ("2", "1"), ("3", "2")}
    assert trace["nodes"][0]["op"] == "PLUS" and not trace["truncated"]

    # The node cap cuts before the levels do: at most max_nodes come back, marked truncated.
    capped = gateway.trace(["0"], backward=True, depth=0, max_nodes=4)
    assert len(capped["nodes"]) == 4 and capped["truncated"]
    capped = gateway.trace(["0"], backward=True, depth=3, max_nodes=3)
    assert len(capped["nodes"]) == 3 and capped["truncated"]
    # The limit cut the level past the drawn ones only: the drawn levels are whole.
    whole = gateway.trace(["0"], backward=True, depth=2, max_nodes=3)
    assert len(whole["nodes"]) == 3 and not whole["truncated"]
    assert [n["id"] for n in whole["nodes"] if n["frontier"]] == ["2"]

    with pytest.raises(GatewayError) as error:
        gateway.find("x", "R", {}, 10)
    assert error.value.status == 404 and "NOT_FOUND" in error.value.message
    gateway.close()
