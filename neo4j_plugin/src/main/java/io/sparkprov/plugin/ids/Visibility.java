package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Nodes;
import java.util.function.LongPredicate;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;

/**
 * What id maintenance may see of the stored graph. A call that keeps ids in its own transaction
 * sees everything ({@link #ALL}). The indexer ({@link IdIndexer}) keeps ids behind the data: the
 * writes not yet indexed are stored, but their edges must not join sets yet and the placeholders
 * they filled still count as placeholders, so that every call of the indexer sees the graph as
 * the writes it indexed so far made it, as if it ran in their transactions.
 *
 * @param pendingRelationship by internal id: a relationship of a write not indexed yet (not
 *     walked, not added)
 * @param pendingFilled by internal id: a placeholder that a write not indexed yet filled (not
 *     known yet)
 */
record Visibility(LongPredicate pendingRelationship, LongPredicate pendingFilled) {
  static final Visibility ALL = new Visibility(id -> false, id -> false);

  /** Whether {@code n} is a stored node (not a placeholder) as the indexed writes left it. */
  boolean known(Node n) {
    return Nodes.known(n) && !pendingFilled.test(n.getId());
  }

  /** This visibility with the placeholders {@code more} (by internal id) pending too. */
  Visibility withPendingFilled(LongPredicate more) {
    LongPredicate filled = pendingFilled;
    return new Visibility(pendingRelationship, id -> filled.test(id) || more.test(id));
  }

  /** This visibility with the relationships {@code more} (by internal id) pending too. */
  Visibility withPendingRelationships(LongPredicate more) {
    LongPredicate rels = pendingRelationship;
    return new Visibility(id -> rels.test(id) || more.test(id), pendingFilled);
  }

  boolean pending(Relationship r) {
    return pendingRelationship.test(r.getId());
  }
}
