package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Nodes;
import io.sparkprov.plugin.graph.Schema;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.ResourceIterable;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;
import org.neo4j.procedure.UserFunction;

/**
 * Cypher's view of the ids kept by reference (docs/graph-schema.md, "Component and set ids"):
 * a node's current component and connected set, and the nodes of a component or a set. Read
 * only; the query service and analysts call these instead of reading a node's properties.
 */
public final class Ids {
  @Context public Transaction tx;

  /** One node of a component or a set. */
  public static final class Member {
    public Node node;

    public Member(Node node) {
      this.node = node;
    }
  }

  @UserFunction(name = "sparkprov.component")
  @Description("The node's current component id; null while ids are pending (the indexer)")
  public Long component(@Name("node") Node node) {
    return node == null || IdIndexer.hasPending(tx) ? null : IdView.reader(tx).component(node);
  }

  @UserFunction(name = "sparkprov.set")
  @Description("The node's current connected-set id (CSProv); null while ids are pending")
  public Long set(@Name("node") Node node) {
    return node == null || IdIndexer.hasPending(tx) ? null : IdView.reader(tx).set(node).id();
  }

  @UserFunction(name = "sparkprov.idsPending")
  @Description("Whether some write's component and set ids wait for the indexer")
  public Boolean idsPending() {
    return IdIndexer.hasPending(tx);
  }

  @UserFunction(name = "sparkprov.theta")
  @Description("The theta the node's connected sets are kept under (its component's)")
  public Long theta(@Name("node") Node node) {
    return node == null ? null : IdView.reader(tx).thetaOf(node);
  }

  @UserFunction(name = "sparkprov.componentRoot")
  @Description("The current component of a component id (the id itself if it is current)")
  public Long componentRoot(@Name("id") Long id) {
    return id == null ? null : IdView.reader(tx).components.root(id);
  }

  @Procedure(name = "sparkprov.componentNodes", mode = Mode.READ)
  @Description("Every node of the component of this component id")
  public Stream<Member> componentNodes(@Name("id") Long id) {
    if (id == null) {
      return Stream.empty();
    }
    IdView view = IdView.reader(tx);
    return view.components.members(view.components.root(id), Forest.NONE).stream().map(Member::new);
  }

  @Procedure(name = "sparkprov.setNodes", mode = Mode.READ)
  @Description("Every node of the current connected set with this id")
  public Stream<Member> setNodes(@Name("id") Long id) {
    if (id == null) {
      return Stream.empty();
    }
    return members(IdView.reader(tx), id).stream().map(Member::new);
  }

  /** One connected-set id. */
  public static final class SetRow {
    public Long set;

    public SetRow(Long set) {
      this.set = set;
    }
  }

  @Procedure(name = "sparkprov.setDependencies", mode = Mode.READ)
  @Description(
      "The sets the connected set with this id depends on (direction 'BACKWARD', the default) or"
          + " that depend on it ('FORWARD'), read from its nodes' edges; none while ids are"
          + " pending")
  public Stream<SetRow> setDependencies(
      @Name("id") Long id, @Name(value = "direction", defaultValue = "BACKWARD") String direction) {
    boolean backward = backward(direction);
    return sets(id, view -> neighbours(view, id, backward));
  }

  @Procedure(name = "sparkprov.setLineage", mode = Mode.READ)
  @Description(
      "The connected set with this id and every set it depends on, directly or not (its"
          + " set-lineage, CSProv); 'FORWARD': the sets that depend on it (its set-descendants);"
          + " none while ids are pending")
  public Stream<SetRow> setLineage(
      @Name("id") Long id, @Name(value = "direction", defaultValue = "BACKWARD") String direction) {
    boolean backward = backward(direction);
    return sets(id, view -> walk(view, List.of(id), backward));
  }

  /** The sets {@code read} finds from set {@code id}; none for no id or while ids are pending. */
  private Stream<SetRow> sets(Long id, java.util.function.Function<IdView, List<Long>> read) {
    if (id == null || IdIndexer.hasPending(tx)) {
      return Stream.empty();
    }
    return read.apply(IdView.reader(tx)).stream().map(SetRow::new);
  }

  private static boolean backward(String direction) {
    return switch (direction == null ? "BACKWARD" : direction.toUpperCase()) {
      case "BACKWARD" -> true;
      case "FORWARD" -> false;
      default -> throw new IllegalArgumentException(
          "direction must be 'BACKWARD' or 'FORWARD', not '" + direction + "'");
    };
  }

  /** The sets and every set reached from them on set dependencies (in walk order). */
  static List<Long> walk(IdView view, Collection<Long> sets, boolean backward) {
    Set<Long> seen = new LinkedHashSet<>(sets);
    List<Long> frontier = new ArrayList<>(seen);
    while (!frontier.isEmpty()) {
      List<Long> following = new ArrayList<>();
      for (long s : frontier) {
        for (long next : neighbours(view, s, backward)) {
          if (seen.add(next)) {
            following.add(next);
          }
        }
      }
      frontier = following;
    }
    return new ArrayList<>(seen);
  }

  /**
   * The sets one dependency up (backward) or down from a set: those of the other ends of its
   * nodes' edges (both ends stored nodes). Read from the edges rather than from {@code SET_DEP},
   * which is stored only between sets of more than one node. A PARTNER relationship r -> g is
   * the dependency of its folded rows' r -> times -> g (a folded TIMES node lies in g's set); a
   * stored TIMES node that is also folded into another group (docs/graph-schema.md, "A join's
   * rows folded into their member edges") depends forward on that group's set too.
   */
  static List<Long> neighbours(IdView view, long setId, boolean backward) {
    Set<Long> out = new LinkedHashSet<>();
    Direction d = backward ? Direction.INCOMING : Direction.OUTGOING;
    for (Node m : members(view, setId)) {
      try (ResourceIterable<Relationship> rels =
          m.getRelationships(d, Schema.DERIVES, Schema.PARTNER)) {
        for (Relationship r : rels) {
          addSet(view, r.getOtherNode(m), setId, out);
        }
      }
      if (!backward && "TIMES".equals(m.getProperty("op", null))) {
        try (ResourceIterator<Relationship> rels =
            view.tx.findRelationships(Schema.DERIVES, Schema.TIMES, view.idOf(m))) {
          rels.forEachRemaining(r -> addSet(view, r.getEndNode(), setId, out));
        }
      }
    }
    return new ArrayList<>(out);
  }

  /** Adds a stored node's set unless it is {@code setId}. */
  private static void addSet(IdView view, Node other, long setId, Set<Long> out) {
    if (Nodes.known(other)) {
      long s = view.set(other).id();
      if (s != setId) {
        out.add(s);
      }
    }
  }

  /**
   * A set's nodes: those of its level set whose connected set it is (a level set past theta
   * keeps at that level only the nodes for which it is the deepest). A set without a record is
   * one node, found by its id at each level.
   */
  static List<Node> members(IdView view, long setId) {
    Node record = view.setRecord(setId);
    if (record == null) {
      for (int k = 0; k < Schema.LEVELS; k++) {
        Node n = view.nodeById(IdView.rootOfSet(k, setId));
        if (n != null && view.set(n).id() == setId) {
          return List.of(n);
        }
      }
      return List.of();
    }
    int level = ((Number) record.getProperty("level")).intValue();
    long root = IdView.rootOfSet(level, setId);
    return view.levels[level].members(root, Forest.NONE).stream()
        .filter(n -> view.set(n).id() == setId)
        .toList();
  }
}
