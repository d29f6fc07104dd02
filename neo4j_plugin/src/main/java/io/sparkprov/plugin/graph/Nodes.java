package io.sparkprov.plugin.graph;

import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.ResourceIterable;

/** Reads of a stored {@code :Node} that the writer, id maintenance and the queries share. */
public final class Nodes {
  private Nodes() {}

  /** Whether {@code n} is a stored node: its own record arrived (a placeholder has no op). */
  public static boolean known(Node n) {
    return n.hasProperty("op");
  }

  public static long idOf(Node n) {
    return ((Number) n.getProperty("id")).longValue();
  }

  /**
   * Whether a relationship of this type leads from {@code a} to {@code b}, walking the side with
   * fewer of them.
   */
  public static boolean connected(Node a, Node b, RelationshipType type) {
    return relationship(a, b, type) != null;
  }

  /** A relationship of this type from {@code a} to {@code b}, or null; as {@link #connected}. */
  public static Relationship relationship(Node a, Node b, RelationshipType type) {
    if (a.getDegree(type, Direction.OUTGOING) <= b.getDegree(type, Direction.INCOMING)) {
      try (ResourceIterable<Relationship> rels = a.getRelationships(Direction.OUTGOING, type)) {
        for (Relationship r : rels) {
          if (r.getEndNode().equals(b)) {
            return r;
          }
        }
      }
    } else {
      try (ResourceIterable<Relationship> rels = b.getRelationships(Direction.INCOMING, type)) {
        for (Relationship r : rels) {
          if (r.getStartNode().equals(a)) {
            return r;
          }
        }
      }
    }
    return null;
  }
}
