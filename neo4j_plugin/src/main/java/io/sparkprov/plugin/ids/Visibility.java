package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Nodes;
import java.util.function.LongPredicate;
import java.util.function.Predicate;
import org.neo4j.graphdb.Node;

/**
 * What id maintenance may see of the stored graph. A call that keeps ids in its own transaction
 * sees everything ({@link #ALL}). The indexer ({@link IdIndexer}) keeps ids behind the data: the
 * writes not yet indexed are stored, but their edges must not join sets yet and the placeholders
 * they filled still count as placeholders, so that every call of the indexer sees the graph as
 * the writes it indexed so far made it, as if it ran in their transactions ({@link
 * PendingWork#after} answers both questions from the waiting writes' records).
 *
 * @param pendingEdge whether an edge is one of a write not indexed yet (not walked, not added)
 * @param pendingFill whether a placeholder was filled by a write not indexed yet (not known yet)
 */
record Visibility(Predicate<Edge> pendingEdge, LongPredicate pendingFill) {
  static final Visibility ALL = new Visibility(e -> false, id -> false);

  /** Whether {@code n} is a stored node (not a placeholder) as the indexed writes left it. */
  boolean known(Node n) {
    return Nodes.known(n) && (this == ALL || !pendingFill.test(Nodes.idOf(n)));
  }

  boolean pending(Edge e) {
    return this != ALL && pendingEdge.test(e);
  }
}
