package io.sparkprov.plugin.query;

import io.sparkprov.plugin.graph.DerivedIds;
import io.sparkprov.plugin.graph.Schema;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.neo4j.graphdb.Relationship;

/**
 * One stored member edge {@code s -[:DERIVES {member_key, member_values, member_nulls}]-> g} and
 * the logical nodes it stands for (docs/graph-schema.md, "Group members"; the Python mirror is
 * query_service/members.py): per aggregated column with a value, a TENSOR and a VALUE node and
 * the edges m -> TENSOR, VALUE -> TENSOR, TENSOR -> AGGREGATE, with sparkprov/derived.py's ids.
 *
 * <p>The member {@code m} is the edge's start node {@code s}, except on a <em>folded</em> member
 * edge (docs/graph-schema.md, "A join's rows folded into their member edges"), which also carries
 * {@code times} and {@code partner}: its member is the join's TIMES node {@code times}, derived
 * with the edges s -> times, partner -> times (one edge when partner is s) and times -> g; the
 * logical graph has no edge s -> g then. A folded member's derived nodes (TIMES, TENSOR, VALUE)
 * carry the group row's ids (its split path, component and set); an unfolded member's carry the
 * member's.
 *
 * @param start the stored edge's start node: the member, or a folded row's left parent
 * @param member the logical member: {@code start}, or a folded row's TIMES id
 * @param partner a folded row's right parent (null: not folded)
 * @param values the member's value per aggregated column, null where the value is null
 */
record MemberEdge(long start, long member, Long partner, long group, String key, String[] values) {

  /** A node a member edge stands for: a folded TIMES node, or a column's TENSOR or VALUE. */
  sealed interface Derived permits Times, Column {
    long id();

    String op();

    String label();

    /** Its value as a node view shows it, or a TENSOR's value ({@link Deletions}). */
    String text();

    /** The stored node that carries its ids ({@link MemberEdge#carrier}). */
    long carrier();

    /** Its logical in-edges. */
    List<long[]> parents();

    /** Its logical out-edges. */
    List<long[]> children();

    default boolean isTensor() {
      return false;
    }
  }

  /**
   * A folded TIMES node, from every folded member edge that names it ({@code edges}: one, unless
   * two aggregations read the same join row), with each edge's TENSOR ids.
   */
  record Times(long id, List<MemberEdge> edges, List<long[]> tensors) implements Derived {
    @Override
    public String op() {
      return "TIMES";
    }

    @Override
    public String label() {
      return "·";
    }

    @Override
    public String text() {
      return "";
    }

    @Override
    public long carrier() {
      return edges.get(0).carrier();
    }

    @Override
    public List<long[]> parents() {
      return edges.get(0).timesParents();
    }

    /** times -> g per edge, and times -> TENSOR per column with a value. */
    @Override
    public List<long[]> children() {
      List<long[]> out = new ArrayList<>();
      for (MemberEdge e : edges) {
        out.add(new long[] {id, e.group});
      }
      out.addAll(tensors);
      return out;
    }
  }

  /** A derived column node: the TENSOR or VALUE of one column, with the ids of its neighbours. */
  record Column(
      long id, String op, MemberEdge edge, int column, long tensor, long value, long aggregate)
      implements Derived {
    @Override
    public boolean isTensor() {
      return op.equals("TENSOR");
    }

    @Override
    public String text() {
      return edge.values[column] == null ? "" : edge.values[column];
    }

    @Override
    public String label() {
      return isTensor() ? "⊗" : text();
    }

    @Override
    public long carrier() {
      return edge.carrier();
    }

    /** Its logical in-edges: m -> TENSOR and VALUE -> TENSOR; a VALUE has none. */
    @Override
    public List<long[]> parents() {
      return isTensor() ? List.of(new long[] {edge.member, id}, new long[] {value, id}) : List.of();
    }

    @Override
    public List<long[]> children() {
      return List.of(isTensor() ? new long[] {id, aggregate} : new long[] {id, tensor});
    }
  }

  /** The member edge a relationship is, or null for a plain edge. */
  static MemberEdge of(Relationship r) {
    Object key = r.getProperty(Schema.MEMBER_KEY_PROPERTY, null);
    if (key == null) {
      return null;
    }
    String[] values = ((String[]) r.getProperty(Schema.MEMBER_VALUES, new String[0])).clone();
    for (long i : (long[]) r.getProperty(Schema.MEMBER_NULLS, new long[0])) {
      values[(int) i] = null;
    }
    long start = (long) r.getStartNode().getProperty("id");
    long group = (long) r.getEndNode().getProperty("id");
    Object times = r.getProperty(Schema.TIMES, null);
    if (times == null) {
      return new MemberEdge(start, start, null, group, (String) key, values);
    }
    long partner = ((Number) r.getProperty(Schema.PARTNER_PROPERTY)).longValue();
    return new MemberEdge(start, ((Number) times).longValue(), partner, group, (String) key, values);
  }

  /** Whether the member is a join's row folded into the edge (its TIMES node is derived). */
  boolean folded() {
    return partner != null;
  }

  /** The stored node whose ids the member's derived nodes carry: the group row when folded. */
  long carrier() {
    return folded() ? group : member;
  }

  /** A folded row's TIMES in-edges: start -> times, partner -> times (one when they are one). */
  List<long[]> timesParents() {
    if (partner == start) {
      return List.of(new long[] {start, member});
    }
    return List.of(new long[] {start, member}, new long[] {partner, member});
  }

  long pair(Salts salts) {
    return member ^ DerivedIds.derive(group, salts.member(key));
  }

  /** The derived nodes of one column (none where the value is null): TENSOR then VALUE. */
  List<Column> column(int i, Salts salts) {
    if (values[i] == null) {
      return List.of();
    }
    long pair = pair(salts);
    long t = DerivedIds.derive(pair, salts.of(key, i, "tensor"));
    long v = DerivedIds.derive(pair, salts.of(key, i, "value"));
    long a = DerivedIds.derive(group, salts.of(key, i, "aggregate"));
    return List.of(
        new Column(t, "TENSOR", this, i, t, v, a), new Column(v, "VALUE", this, i, t, v, a));
  }

  /** Every derived column node of the edge (its TIMES node aside). */
  List<Column> derived(Salts salts) {
    List<Column> out = new ArrayList<>();
    for (int i = 0; i < values.length; i++) {
      out.addAll(column(i, salts));
    }
    return out;
  }

  /** The member -> TENSOR edges of the edge's columns with a value. */
  List<long[]> memberToTensors(Salts salts) {
    List<long[]> out = new ArrayList<>();
    for (Column c : derived(salts)) {
      if (c.isTensor()) {
        out.add(new long[] {member, c.id()});
      }
    }
    return out;
  }

  /** Which column's AGGREGATE {@code aggregate} is (null: none); members.aggregate_column. */
  Integer columnOf(long aggregate, Salts salts) {
    for (int i = 0; i < values.length; i++) {
      if (DerivedIds.derive(group, salts.of(key, i, "aggregate")) == aggregate) {
        return i;
      }
    }
    return null;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof MemberEdge e
        && e.start == start
        && e.member == member
        && java.util.Objects.equals(e.partner, partner)
        && e.group == group
        && e.key.equals(key)
        && Arrays.equals(e.values, values);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(member * 31 + group) ^ key.hashCode();
  }

  /** The salts of sparkprov/derived.py, each computed once per call. */
  static final class Salts {
    private final Map<String, Long> cache = new HashMap<>();

    long member(String key) {
      return cache.computeIfAbsent(key + "\0member", k -> DerivedIds.salt(key, "member"));
    }

    long of(String key, int column, String kind) {
      return cache.computeIfAbsent(
          key + "\0" + column + "\0" + kind, k -> DerivedIds.salt(key, column, kind));
    }
  }
}
