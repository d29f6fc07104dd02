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
 * One stored member edge {@code m -[:DERIVES {member_key, member_values, member_nulls}]-> g} and
 * the logical nodes it stands for (docs/graph-schema.md, "Group members"; the Python mirror is
 * query_service/members.py): per aggregated column with a value, a TENSOR and a VALUE node and
 * the edges m -> TENSOR, VALUE -> TENSOR, TENSOR -> AGGREGATE, with sparkprov/derived.py's ids.
 *
 * @param values the member's value per aggregated column, null where the value is null
 */
record MemberEdge(long member, long group, String key, String[] values) {

  /** A derived node: the TENSOR or VALUE of one column, with the ids of its neighbours. */
  record Derived(
      long id, String op, MemberEdge edge, int column, long tensor, long value, long aggregate) {
    boolean isTensor() {
      return op.equals("TENSOR");
    }

    String text() {
      return edge.values[column] == null ? "" : edge.values[column];
    }

    String label() {
      return isTensor() ? "⊗" : text();
    }

    /** Its logical in-edges: m -> TENSOR and VALUE -> TENSOR; a VALUE has none. */
    List<long[]> parents() {
      return isTensor() ? List.of(new long[] {edge.member, id}, new long[] {value, id}) : List.of();
    }

    List<long[]> children() {
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
    long member = (long) r.getStartNode().getProperty("id");
    long group = (long) r.getEndNode().getProperty("id");
    return new MemberEdge(member, group, (String) key, values);
  }

  long pair(Salts salts) {
    return member ^ DerivedIds.derive(group, salts.member(key));
  }

  /** The derived nodes of one column (none where the value is null): TENSOR then VALUE. */
  List<Derived> column(int i, Salts salts) {
    if (values[i] == null) {
      return List.of();
    }
    long pair = pair(salts);
    long t = DerivedIds.derive(pair, salts.of(key, i, "tensor"));
    long v = DerivedIds.derive(pair, salts.of(key, i, "value"));
    long a = DerivedIds.derive(group, salts.of(key, i, "aggregate"));
    return List.of(
        new Derived(t, "TENSOR", this, i, t, v, a), new Derived(v, "VALUE", this, i, t, v, a));
  }

  /** Every derived node of the edge. */
  List<Derived> derived(Salts salts) {
    List<Derived> out = new ArrayList<>();
    for (int i = 0; i < values.length; i++) {
      out.addAll(column(i, salts));
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
        && e.member == member
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
