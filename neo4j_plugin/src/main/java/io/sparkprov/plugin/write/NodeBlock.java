package io.sparkprov.plugin.write;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One node block of a flush: the columns of nodes that one capture point sent for one run. The
 * contract between ingest's Python side and this procedure; the Python mirror is the TypedDict
 * {@code sparkprov.blocks.NodeBlock} (built by {@code sparkprov.events.decode}, sent by {@code
 * ingest_service.store}), and both sides test against the example payload {@code
 * src/test/resources/write-payload.json}.
 *
 * <p>Keys as sent: {@code run, op, ids, label, labels, relation, values, shared, split,
 * attribute_names, attribute_values, null_rows}. {@code labels} and {@code values} are empty or
 * hold one entry per id; {@code attribute_values} and {@code null_rows} hold one column per
 * attribute name (a null row's value is an empty string and is not stored).
 *
 * @param relation null when the rows belong to no named relation (Python sends None)
 */
public record NodeBlock(
    String run,
    String op,
    long[] ids,
    String label,
    List<String> labels,
    String relation,
    List<String> values,
    boolean shared,
    List<String> split,
    List<String> attributeNames,
    List<List<String>> attributeValues,
    List<Set<Long>> nullRows) {

  /** Parses block {@code position} of a call; a malformed block names itself and the field. */
  public static NodeBlock parse(Map<String, Object> map, int position) {
    BlockFields f = new BlockFields(map, "node block " + position);
    long[] ids = f.longs("ids");
    List<String> labels = f.strings("labels");
    List<String> values = f.strings("values");
    List<String> names = f.strings("attribute_names");
    List<List<String>> columns = f.stringColumns("attribute_values");
    List<long[]> nullColumns = f.longColumns("null_rows");
    requireEmptyOrPerId(f, "labels", labels.size(), ids.length);
    requireEmptyOrPerId(f, "values", values.size(), ids.length);
    if (columns.size() != names.size()) {
      throw f.error("attribute_values", "has " + columns.size() + " columns for " + names.size()
          + " attribute names");
    }
    if (nullColumns.size() != names.size()) {
      throw f.error("null_rows", "has " + nullColumns.size() + " columns for " + names.size()
          + " attribute names");
    }
    List<Set<Long>> nulls = new ArrayList<>(nullColumns.size());
    for (int a = 0; a < names.size(); a++) {
      if (columns.get(a).size() != ids.length) {
        throw f.error("attribute_values[" + a + "]", "has " + columns.get(a).size()
            + " values for " + ids.length + " ids");
      }
      Set<Long> rows = new HashSet<>();
      for (long r : nullColumns.get(a)) {
        rows.add(r);
      }
      nulls.add(rows);
    }
    return new NodeBlock(
        f.string("run"),
        f.string("op"),
        ids,
        f.string("label"),
        labels,
        f.optionalString("relation"),
        values,
        f.bool("shared"),
        f.strings("split"),
        names,
        columns,
        nulls);
  }

  /** The blocks of one call, in order (their positions are the conflict report's). */
  public static List<NodeBlock> parseAll(List<Map<String, Object>> blocks) {
    if (blocks == null) {
      throw new IllegalArgumentException("blocks is null");
    }
    List<NodeBlock> out = new ArrayList<>(blocks.size());
    for (int b = 0; b < blocks.size(); b++) {
      out.add(parse(blocks.get(b), b));
    }
    return out;
  }

  private static void requireEmptyOrPerId(BlockFields f, String field, int size, int ids) {
    if (size != 0 && size != ids) {
      throw f.error(field, "has " + size + " entries for " + ids + " ids (must be 0 or " + ids
          + ")");
    }
  }

  int size() {
    return ids.length;
  }

  /** Nodes {@code from} (inclusive) to {@code to} (exclusive) as a block of their own. */
  NodeBlock slice(int from, int to) {
    List<List<String>> columns = new ArrayList<>(attributeValues.size());
    List<Set<Long>> nulls = new ArrayList<>(nullRows.size());
    for (int a = 0; a < attributeValues.size(); a++) {
      columns.add(attributeValues.get(a).subList(from, to));
      Set<Long> rows = new HashSet<>();
      for (long r : nullRows.get(a)) {
        if (r >= from && r < to) {
          rows.add(r - from);
        }
      }
      nulls.add(rows);
    }
    return new NodeBlock(
        run,
        op,
        Arrays.copyOfRange(ids, from, to),
        label,
        labels.isEmpty() ? labels : labels.subList(from, to),
        relation,
        values.isEmpty() ? values : values.subList(from, to),
        shared,
        split,
        attributeNames,
        columns,
        nulls);
  }

  /** Node {@code i}'s label: its own, or the block's when {@code labels} is empty. */
  String labelOf(int i) {
    return labels.isEmpty() ? label : labels.get(i);
  }

  /** Whether attribute {@code a} is null for node {@code i}. */
  boolean isNull(int a, int i) {
    return nullRows.get(a).contains((long) i);
  }
}
