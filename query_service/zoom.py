"""ZoomOut and ZoomIn (Lipstick section 4.1, MODEL.md section 4) as views: pure functions from an
in-memory graph to a new one; the stored graph is never changed.

Roles are read from the graph's shape, as the stored nodes carry no role: the children of an
invocation's MODULE node are its module nodes (TIMES of a row or state tuple and the invocation);
one without a relation is a state node (state nodes carry no relation name). One with a relation
is an output when its row derives from the invocation itself (a descendant of the MODULE node),
an input when another module row of the invocation derives from it. Otherwise it is ambiguous:
the same (module, relation) classified with certainty in another invocation decides; failing
that, a row nobody uses is a dead input (an invocation that found nothing to do) and a row used
downstream a pass-through output (a module publishing a source row). A role stored by capture
would remove the guess (asked of the capture agent).

Choices where the paper is silent:
- A VALUE node (a v-node without parents) all of whose children are intermediate is part of the
  intermediate computation: it is a value used only inside the module.
- Step 4 removes a state tuple's TOKEN only when every one of its state nodes is removed: tokens
  are shared by invocations, runs and modules that name the same state relation, and a token
  still used by a module that stays zoomed in must stay.
- Step 5's new node reuses the invocation's MODULE node id, label and op; its edges to the input
  nodes turn around (input -> M), its edges to outputs stay (M -> output).
ZoomIn(view of G with Z zoomed out, M) is the view of G with Z minus M zoomed out, so
ZoomIn(ZoomOut(G, M), M) = G holds by construction; tests check it on random graphs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from query_service.graph import Graph

__all__ = ["Invocation", "ZoomedView", "invocations", "zoom_in", "zoom_out"]


@dataclass
class Invocation:
    module: int
    name: str
    inputs: list[int] = field(default_factory=list)
    states: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


@dataclass
class ZoomedView:
    graph: Graph
    modules: list[str]
    zoomed_nodes: list[int]  # one per zoomed-out invocation: its MODULE node's id
    hidden: int = 0  # nodes of the stored graph not in the view


def invocations(graph: Graph, modules: Iterable[str] | None = None) -> list[Invocation]:
    """Invocations of the named modules (all when None), with their module nodes by role."""
    wanted = None if modules is None else set(modules)
    out = []
    certain: dict[tuple[str, str], str] = {}  # (module, relation) -> role, from certain cases
    pending: list[tuple[Invocation, int, str]] = []  # (invocation, row, fallback role)
    for node_id in sorted(graph.ids()):
        view = graph.nodes.get(node_id)
        if view is None or view.op != "MODULE" or (wanted is not None and view.label not in wanted):
            continue
        inv = Invocation(node_id, view.label)
        own = set(graph.reach([node_id]))
        candidates = [c for c in sorted(graph.children.get(node_id, ())) if graph.op(c) == "TIMES"]
        rows = [c for c in candidates if graph.nodes[c].relation]
        inv.states = [c for c in candidates if not graph.nodes[c].relation]
        # Nodes from which some module row of this invocation is reachable (strictly).
        upstream: set[int] = set()
        frontier = [p for r in rows for p in graph.parents.get(r, ()) if p in own]
        while frontier:
            following: list[int] = []
            for n in frontier:
                if n not in upstream:
                    upstream.add(n)
                    following.extend(p for p in graph.parents.get(n, ()) if p in own)
            frontier = following
        for c in rows:
            key = (view.label, graph.nodes[c].relation)
            others = [p for p in graph.parents.get(c, ()) if p != node_id]
            if any(p in own for p in others):
                role = "output"  # derived inside the invocation
            elif c in upstream:
                role = "input"  # the invocation derives a row from it
            else:
                # Ambiguous: a dead input (no children: nothing inside used it) or a
                # pass-through output (used downstream only). Other invocations may know.
                fallback = "input" if not graph.children.get(c) else "output"
                pending.append((inv, c, fallback))
                continue
            certain.setdefault(key, role)
            (inv.outputs if role == "output" else inv.inputs).append(c)
        out.append(inv)
    for inv, c, fallback in pending:
        role = certain.get((inv.name, graph.nodes[c].relation), fallback)
        (inv.outputs if role == "output" else inv.inputs).append(c)
    for inv in out:
        inv.inputs.sort()
        inv.outputs.sort()
    return out


def _intermediate(graph: Graph, invs: list[Invocation]) -> set[int]:
    """Definition 4.1: nodes reached from an input or state node by a path with no output node."""
    outputs = {o for inv in invs for o in inv.outputs}
    starts = [n for inv in invs for n in inv.inputs + inv.states]
    found: set[int] = set()
    frontier = list(starts)
    while frontier:
        following = []
        for n in frontier:
            for c in graph.children.get(n, ()):
                if c not in found and c not in outputs:
                    found.add(c)
                    following.append(c)
        frontier = following
    # v-nodes used only inside: values whose every child is intermediate
    for n in graph.ids():
        if graph.op(n) == "VALUE" and not graph.parents.get(n):
            kids = graph.children.get(n, set())
            if kids and kids <= found:
                found.add(n)
    return found


def zoom_out(graph: Graph, modules: Iterable[str]) -> ZoomedView:
    names = sorted(set(modules))
    invs = invocations(graph, names)  # steps 1 and 2
    removed = _intermediate(graph, invs)  # step 3
    inputs = {n for inv in invs for n in inv.inputs}
    outputs = {n for inv in invs for n in inv.outputs}
    # Step 3 never removes an input or an output of a zoomed invocation (they are the interface).
    removed -= inputs | outputs
    states = {n for inv in invs for n in inv.states}
    removed |= states  # step 4
    for state in states:
        for token in graph.parents.get(state, ()):
            if graph.op(token) == "TOKEN" and graph.children.get(token, set()) <= removed:
                removed.add(token)
    zoomed = {inv.module for inv in invs}
    keep = [n for n in graph.ids() if n not in removed]
    view = Graph.of(
        (
            (s, d)
            for s, d in graph.edges()
            if s not in removed and d not in removed and not (s in zoomed and d in inputs)
        ),
        {i: v for i, v in graph.nodes.items() if i not in removed},
    )
    for node_id in keep:
        view.add_node(node_id)
    for inv in invs:  # step 5
        for i in inv.inputs:
            view.add_edge(i, inv.module)
        for o in inv.outputs:
            view.add_edge(inv.module, o)
    return ZoomedView(view, names, sorted(zoomed), hidden=len(removed))


def zoom_in(graph: Graph, zoomed_out: Iterable[str], modules: Iterable[str]) -> ZoomedView:
    """The view of ``graph`` (the stored graph) with ``zoomed_out`` minus ``modules`` zoomed out:
    ZoomIn of a view that had ``zoomed_out`` zoomed out."""
    return zoom_out(graph, set(zoomed_out) - set(modules))
