from __future__ import annotations

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st

from ingest_service.components import plan_merges


@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=60),
    st.dictionaries(st.integers(0, 30), st.integers(1, 50)),
)
def test_merges_equal_connected_components_and_keep_the_largest(
    pairs: list[tuple[int, int]], sizes: dict[int, int]
) -> None:
    pairs = [(a, b) for a, b in pairs if a != b]
    merges, grown = plan_merges(pairs, sizes)
    label = {m.old: m.new for m in merges}
    graph = nx.Graph(pairs)
    for component in nx.connected_components(graph):
        targets = {label.get(c, c) for c in component}
        assert len(targets) == 1
        (target,) = targets
        assert target in component and target not in label  # never relabelled twice
        assert sizes.get(target, 1) == max(sizes.get(c, 1) for c in component)
        assert grown[target] == sum(sizes.get(c, 1) for c in component)
    assert len(merges) == sum(len(c) - 1 for c in nx.connected_components(graph))
