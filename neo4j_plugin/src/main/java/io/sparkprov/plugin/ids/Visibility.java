package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Nodes;
import java.util.Set;
import org.neo4j.graphdb.Node;

/**
 * What id maintenance may see of the stored graph. A call that keeps ids in its own transaction
 * sees everything ({@link #ALL}). The indexer ({@link IdIndexer}) keeps ids behind the data: the
 * writes not yet indexed are stored, but their edges must not join sets yet and the placeholders
 * they filled still count as placeholders, so that every call of the indexer sees the graph as
 * the writes it indexed so far made it, as if it ran in their transactions.
 *
 * @param pendingEdges edges of writes not indexed yet (not walked, not added)
 * @param pendingFilled placeholders that writes not indexed yet filled (not known yet)
 */
record Visibility(Set<Edge> pendingEdges, Set<Long> pendingFilled) {
  static final Visibility ALL = new Visibility(Set.of(), Set.of());

  /** Whether {@code n} is a stored node (not a placeholder) as the indexed writes left it. */
  boolean known(Node n) {
    return Nodes.known(n)
        && (pendingFilled.isEmpty() || !pendingFilled.contains(Nodes.idOf(n)));
  }

  boolean pending(Edge e) {
    return !pendingEdges.isEmpty() && pendingEdges.contains(e);
  }
}
