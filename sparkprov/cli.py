"""The ``sparkprov`` command: the query service from a terminal (click; console script).

    sparkprov runs [--workflow W]
    sparkprov find RUN RELATION col=value...
    sparkprov trace back|forward NODE_ID... [--depth N] [--strategy S]
                    [--format tree|json|dot|prov-json|prov-n]
    sparkprov export RUN RELATION... [--format prov-json|prov-n|json|dot]
    sparkprov whatif-delete NODE_ID...
    sparkprov provenance NODE_ID [--semiring S]
    sparkprov open RUN|NODE_ID
    sparkprov versions WORKFLOW
    sparkprov diff WORKFLOW A B

The address and token come from ``--address`` / ``--token`` or the variables the services read
(``SPARKPROV_GRPC_ADDR``, ``SPARKPROV_QUERY_TOKEN``). A failed call prints one line,
``sparkprov: <STATUS>: <message>``, on stderr and exits with the status's code below, so scripts
can tell a bad id from a server that is down.
"""

from __future__ import annotations

import json
import re
import sys
import webbrowser
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, NoReturn

import click
import grpc

from sparkprov import defaults, prov_export
from sparkprov.client import QueryClient
from sparkprov.query_errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    QueryError,
    Unauthenticated,
    Unavailable,
)
from sparkprov.query_model import (
    DagOperator,
    Node,
    Op,
    Semiring,
    SourceRow,
    Strategy,
    Trace,
    VersionInfo,
)
from sparkprov.trace_render import describe, plain, render_dot, render_json, render_trace

__all__ = ["EXIT_CODES", "main"]

# Exit codes: 0 success, 2 usage error (click's), then one per kind of failed call.
EXIT_CODES: dict[type[QueryError], int] = {
    QueryError: 1,
    NotFound: 3,
    InvalidArgument: 4,
    Unavailable: 5,
    Unauthenticated: 6,
    FailedPrecondition: 7,
}

_NODE_ID = re.compile(r"-?\d{1,20}")
# Node ids are signed: "-752..." must reach the command as an argument, not an unknown option.
_IDS: dict[str, Any] = {"ignore_unknown_options": True}


def _fail(error: QueryError) -> NoReturn:
    message = " ".join(error.details.split()) or "(no details)"
    click.echo(f"sparkprov: {error.status}: {message}", err=True)
    sys.exit(EXIT_CODES.get(type(error), 1))


@contextmanager
def _client(ctx: click.Context) -> Iterator[QueryClient]:
    options = ctx.find_root().obj
    client = QueryClient(
        options["address"],
        options["timeout"],
        token=options["token"],
        tls_ca=options["tls_ca"] or None,
        tls=options["tls"],
    )
    try:
        with client:
            yield client
    except QueryError as e:
        _fail(e)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--address",
    envvar=defaults.ENV_GRPC_ADDR,
    default=defaults.GRPC_ADDR,
    show_default=True,
    help=f"query service host:port (env {defaults.ENV_GRPC_ADDR})",
)
@click.option(
    "--token",
    envvar=defaults.ENV_QUERY_TOKEN,
    default="",
    help=f"bearer token (env {defaults.ENV_QUERY_TOKEN})",
)
@click.option("--timeout", default=30.0, show_default=True, help="seconds per call")
@click.option(
    "--tls-ca",
    envvar=defaults.ENV_QUERY_TLS_CA,
    default="",
    type=click.Path(dir_okay=False),
    help=f"TLS: PEM file of the CA that signed the service's certificate "
    f"(env {defaults.ENV_QUERY_TLS_CA})",
)
@click.option(
    "--tls",
    envvar=defaults.ENV_QUERY_TLS,
    is_flag=True,
    help=f"TLS, trusting the system's CAs (env {defaults.ENV_QUERY_TLS}=1)",
)
@click.pass_context
def main(
    ctx: click.Context, address: str, token: str, timeout: float, tls_ca: str, tls: bool
) -> None:
    """Row-level provenance of PySpark runs, from the sparkprov query service.

    Exit codes: 0 ok, 1 other error, 2 usage, 3 NOT_FOUND, 4 INVALID_ARGUMENT,
    5 UNAVAILABLE (server or Neo4j down, deadline), 6 UNAUTHENTICATED,
    7 FAILED_PRECONDITION (e.g. a run others are tied to)."""
    ctx.obj = dict(address=address, token=token, timeout=timeout, tls_ca=tls_ca, tls=tls)


@main.group(invoke_without_command=True)
@click.option("--workflow", default="", help="only this workflow's runs")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per run")
@click.pass_context
def runs(ctx: click.Context, workflow: str, as_json: bool) -> None:
    """List runs, newest first: id, workflow, state, nodes and edges stored, and the sinks a
    run reused from an earlier run's stored result (``reused SINK<-RUN``). ``runs delete``
    removes one."""
    if ctx.invoked_subcommand is not None:
        return
    with _client(ctx) as client:
        for run in client.runs(workflow):
            if as_json:
                click.echo(json.dumps(plain(asdict(run))))
                continue
            expected = "?" if run.expected_node_count < 0 else str(run.expected_node_count)
            # A run that reused stored sink results says which, and whose: sink<-run.
            reused = "".join(f"  reused {u.sink}<-{u.run_id}" for u in run.reuses)
            click.echo(
                f"{run.run_id}  {run.workflow}  {run.state.name}  "
                f"nodes={run.node_count}/{expected} edges={run.edge_count}{reused}"
            )


@runs.command("delete")
@click.argument("run_id")
@click.option("--follow", is_flag=True, help="also delete the runs tied to it, instead of refusing")
@click.option("--force", is_flag=True, help="delete it even when not complete (a job that died)")
@click.pass_context
def runs_delete(ctx: click.Context, run_id: str, follow: bool, force: bool) -> None:
    """Delete RUN_ID's lineage from the store (retention). Refused (exit 7) when other runs are
    tied to it by shared lineage or reuse (``--follow`` deletes them too), while it is not
    complete (``--force``) or not indexed yet (ask again). Asking again finishes a deletion cut
    short."""
    with _client(ctx) as client:
        deleted = client.delete_run(run_id, follow=follow, force=force)
    click.echo(
        f"deleted {len(deleted.run_ids)} run(s): {' '.join(deleted.run_ids)} "
        f"(nodes={deleted.nodes} relationships={deleted.relationships})"
    )


def _equals(pairs: tuple[str, ...]) -> dict[str, str]:
    equals: dict[str, str] = {}
    for pair in pairs:
        column, sep, value = pair.partition("=")
        if not sep or not column:
            raise click.BadParameter(f"{pair!r} is not col=value", param_hint="col=value")
        equals[column] = value
    return equals


@main.command()
@click.argument("run")
@click.argument("relation")
@click.argument("values", nargs=-1, metavar="col=value...")
@click.option("--limit", default=0, help="most rows (0 = the server's default, 1000)")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per row")
@click.pass_context
def find(
    ctx: click.Context, run: str, relation: str, values: tuple[str, ...], limit: int, as_json: bool
) -> None:
    """Rows of RELATION in RUN whose columns equal the values: node id, then the row."""
    equals = _equals(values)
    with _client(ctx) as client:
        for node in client.find_nodes(run, relation, equals, limit=limit):
            click.echo(json.dumps(_node(node)) if as_json else f"{node.id}  {describe(node)}")


_FORMATS = ["tree", "json", "dot", "prov-json", "prov-n"]
_RENDER: dict[str, Callable[[Trace], str]] = {
    "json": render_json,
    "dot": render_dot,
    "prov-json": prov_export.to_prov_json,
    "prov-n": prov_export.to_prov_n,
}


@main.command(context_settings=_IDS)
@click.argument("direction", type=click.Choice(["back", "forward"]))
@click.argument("node_ids", nargs=-1, required=True, metavar="NODE_ID...")
@click.option("--depth", default=0, help="levels to follow (0 = all)")
@click.option(
    "--strategy",
    type=click.Choice([s.name.lower() for s in Strategy], case_sensitive=False),
    default="auto",
    show_default=True,
)
@click.option("--limit", default=0, help="most nodes (0 = the server's default)")
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="tree", show_default=True)
@click.pass_context
def trace(
    ctx: click.Context,
    direction: str,
    node_ids: tuple[str, ...],
    depth: int,
    strategy: str,
    limit: int,
    fmt: str,
) -> None:
    """Backward (ancestors) or forward (descendants) trace of nodes, as the tree `make demo`
    prints, JSON, Graphviz DOT, or W3C PROV (PROV-JSON, PROV-N)."""
    backward = direction == "back"
    with _client(ctx) as client:
        call = client.backward_trace if backward else client.forward_trace
        result = call(
            list(node_ids), max_depth=depth, limit=limit, strategy=Strategy[strategy.upper()]
        )
    if fmt == "tree":
        click.echo("\n\n".join(render_trace(result, i, backward=backward) for i in node_ids))
    else:
        click.echo(_RENDER[fmt](result))


_LOCATED_PER_CALL = 10_000  # the query service's ids per request (query_service.limits)


@main.command(context_settings=_IDS)
@click.argument("node_ids", nargs=-1, required=True, metavar="NODE_ID...")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per source row")
@click.pass_context
def sources(ctx: click.Context, node_ids: tuple[str, ...], as_json: bool) -> None:
    """The input rows that made NODE_IDs: every source row their backward trace reaches, with
    the file and row it was read from (parquet), or Spark's partition and offset, and its values."""
    with _client(ctx) as client:
        found = client.backward_trace(list(node_ids))
        tokens = [n for n in found.nodes if n.op == Op.TOKEN and n.relation]
        located: list[SourceRow] = []
        for start in range(0, len(tokens), _LOCATED_PER_CALL):
            chunk = tokens[start : start + _LOCATED_PER_CALL]
            located += client.locate_source_rows([n.id for n in chunk])
    if found.truncated:
        click.echo("the trace was truncated: some source rows are not listed", err=True)
    for node, where in zip(tokens, located, strict=True):
        if as_json:
            click.echo(json.dumps({**plain(asdict(where)), "attributes": node.attributes}))
            continue
        at = (
            f"{where.file}:{where.row}"
            if where.by_file
            else (f"partition {where.partition} offset {where.offset}")
        )
        values = " ".join(f"{k}={v}" for k, v in sorted(node.attributes.items()))
        click.echo(f"{node.id}  {node.relation}  {at}" + (f"  {values}" if values else ""))


@main.command()
@click.argument("run")
@click.argument("relations", nargs=-1, required=True, metavar="RELATION...")
@click.option(
    "--format", "fmt", type=click.Choice(_FORMATS[1:]), default="prov-json", show_default=True
)
@click.pass_context
def export(ctx: click.Context, run: str, relations: tuple[str, ...], fmt: str) -> None:
    """A whole run: every row of the RELATIONs (its outputs) with all their ancestors, as
    W3C PROV (PROV-JSON, PROV-N), JSON or DOT."""
    with _client(ctx) as client:
        result = client.run_trace(run, list(relations))
    click.echo(_RENDER[fmt](result))


@main.command("whatif-delete", context_settings=_IDS)
@click.argument("node_ids", nargs=-1, required=True, metavar="NODE_ID...")
@click.pass_context
def whatif_delete(ctx: click.Context, node_ids: tuple[str, ...]) -> None:
    """What deleting these nodes would remove (deletion propagation), and which aggregates
    survive with another value. Nothing is deleted: the stored graph never changes."""
    with _client(ctx) as client:
        deletion = client.propagate_deletion(list(node_ids))
        reached = client.forward_trace(list(node_ids))
    nodes = {n.id: n for n in reached.nodes}
    rows: dict[str, list[str]] = {}  # an aggregate -> the rows it is a value of
    for edge in reached.edges:
        rows.setdefault(edge.src, []).append(edge.dst)
    click.echo(f"removed: {len(deletion.deleted_node_ids)} node(s)")
    for node_id in deletion.deleted_node_ids:
        node = nodes.get(node_id)
        click.echo(f"  {node_id}  {describe(node) if node else ''}".rstrip())
    click.echo(f"aggregates that change: {len(deletion.recomputed)}")
    for change in deletion.recomputed:
        of = [describe(nodes[r]) for r in rows.get(change.node_id, []) if r in nodes]
        click.echo(
            f"  {change.node_id}  {change.function} {change.old_value} -> {change.new_value}"
            f" ({change.inputs} input(s) left)" + (f"  of {'; '.join(of)}" if of else "")
        )


def _pairs(values: tuple[str, ...], what: str) -> dict[str, float]:
    parsed: dict[str, float] = {}
    for pair in values:
        key, sep, number = pair.partition("=")
        try:
            parsed[key] = float(number)
        except ValueError:
            sep = ""
        if not sep:
            raise click.BadParameter(f"{pair!r} is not NODE_ID=number", param_hint=what)
    return parsed


@main.command(context_settings=_IDS)
@click.argument("node_id")
@click.option(
    "--semiring",
    type=click.Choice([s.name.lower() for s in Semiring], case_sensitive=False),
    default="none",
    show_default=True,
    help="evaluate the polynomial there (NONE: the polynomial only)",
)
@click.option("--false", "false_tokens", multiple=True, help="BOOLEAN: a token set to false")
@click.option("--cost", multiple=True, help="TROPICAL: NODE_ID=cost (default 1)")
@click.option("--probability", multiple=True, help="PROBABILITY: NODE_ID=p (default 1)")
@click.pass_context
def provenance(
    ctx: click.Context,
    node_id: str,
    semiring: str,
    false_tokens: tuple[str, ...],
    cost: tuple[str, ...],
    probability: tuple[str, ...],
) -> None:
    """The provenance polynomial of a node (over its source tokens) and its value in a
    semiring."""
    chosen = Semiring[semiring.upper()]
    costs, probabilities = _pairs(cost, "--cost"), _pairs(probability, "--probability")
    with _client(ctx) as client:
        answer = client.provenance(
            node_id,
            semiring=chosen,
            false_tokens=false_tokens,
            token_costs=costs,
            token_probabilities=probabilities,
        )
    click.echo(answer.polynomial + (" ..." if answer.text_truncated else ""))
    for token in answer.tokens:
        click.echo(f"  {token.id}  {describe(token)}")
    value: dict[Semiring, str] = {
        Semiring.BOOLEAN: str(answer.boolean).lower(),
        Semiring.COUNTING: str(answer.count),
        Semiring.WHY: "; ".join("{" + ", ".join(w) + "}" for w in answer.witnesses)
        + (" ..." if answer.witnesses_truncated else ""),
        Semiring.TROPICAL: str(answer.cost),
        Semiring.PROBABILITY: f"{answer.probability} ({answer.method})",
    }
    if chosen in value:
        click.echo(f"{chosen.name}: {value[chosen]}")


@main.command("open", context_settings=_IDS)
@click.argument("target", metavar="RUN|NODE_ID")
@click.option(
    "--viewer",
    envvar=defaults.ENV_VIEWER_ADDR,
    default=defaults.VIEWER_ADDR,
    show_default=True,
    help=f"the trace viewer's host:port (env {defaults.ENV_VIEWER_ADDR})",
)
@click.option("--no-browser", is_flag=True, help="print the URL only")
def open_viewer(target: str, viewer: str, no_browser: bool) -> None:
    """Open a run (or a node: a decimal id) in the trace viewer, and print its URL."""
    kind = "node" if _NODE_ID.fullmatch(target) else "run"
    url = f"http://{viewer}/#{kind}={target}"
    click.echo(url)
    if not no_browser:
        webbrowser.open(url)


@main.command()
@click.argument("workflow")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per version")
@click.pass_context
def versions(ctx: click.Context, workflow: str, as_json: bool) -> None:
    """List a workflow's versions in order: seq, version id, operators, runs, named relations."""
    with _client(ctx) as client:
        listed = client.list_versions(workflow)
    for version in listed:
        if as_json:
            click.echo(json.dumps(plain(asdict(version))))
            continue
        click.echo(
            f"{version.seq}  {version.version_id}  operators={version.operator_count} "
            f"runs={len(version.run_ids)}  {','.join(version.sinks)}"
        )


def _version(listed: list[VersionInfo], workflow: str, given: str) -> str:
    """The version id ``given`` names: an id, a seq number, or a unique prefix of an id."""
    for version in listed:
        if given in (version.version_id, str(version.seq)):
            return version.version_id
    matches = [v.version_id for v in listed if given and v.version_id.startswith(given)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise InvalidArgument(
            grpc.StatusCode.INVALID_ARGUMENT, f"{given!r} is a prefix of {len(matches)} versions"
        )
    raise NotFound(grpc.StatusCode.NOT_FOUND, f"no version {given!r} of workflow {workflow!r}")


def _operator(op: DagOperator) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in sorted(op.params.items()) if k != "code")
    return f"{op.kind}({shown})  {op.id}"


@main.command()
@click.argument("workflow")
@click.argument("version_a", metavar="A")
@click.argument("version_b", metavar="B")
@click.option("--json", "as_json", is_flag=True, help="the edit as one JSON object")
@click.pass_context
def diff(ctx: click.Context, workflow: str, version_a: str, version_b: str, as_json: bool) -> None:
    """The edit from version A to version B of WORKFLOW. A version is its id, its seq number
    (as `versions` lists them) or a unique prefix of its id."""
    with _client(ctx) as client:
        listed = client.list_versions(workflow)
        a, b = (_version(listed, workflow, v) for v in (version_a, version_b))
        edit = client.diff_versions(workflow, a, b)
    if as_json:
        click.echo(json.dumps(plain(asdict(edit))))
        return
    click.echo(f"{a} -> {b}")
    for op in edit.added:
        click.echo(f"+ {_operator(op)}")
    for op in edit.removed:
        click.echo(f"- {_operator(op)}")
    for change in edit.changed:
        click.echo(f"~ {_operator(change.before)}\n  -> {_operator(change.after)}")
    for change in edit.moved:
        before, after = ",".join(change.before.inputs), ",".join(change.after.inputs)
        click.echo(f"> {_operator(change.after)}  reads {after} (was {before})")
    for sign, links in (("+", edit.links_added), ("-", edit.links_removed)):
        for link in links:
            click.echo(f"{sign} link {link.src} -> {link.dst}")


def _node(node: Node) -> Any:
    return plain(asdict(node))
