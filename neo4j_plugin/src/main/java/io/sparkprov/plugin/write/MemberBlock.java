package io.sparkprov.plugin.write;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * One member block of a flush: the members of an aggregate's groups, stored compactly as one
 * {@code DERIVES} edge per member ({@code members[k] -> groups[k]}, the member to the DELTA row of
 * its group) that carries the member's aggregated values, instead of a TENSOR and a VALUE node
 * per value: the query service derives those logical nodes from the edge. The Python mirror is
 * the TypedDict {@code sparkprov.blocks.MemberBlock}; see {@link NodeBlock} for the shared
 * example payload.
 *
 * <p>Keys as sent: {@code run, group_key, members, groups, pairs, aggregates, values, null_rows,
 * lefts, partners, split}.
 * {@code members}, {@code groups} and {@code pairs} hold one entry per member; {@code values} and
 * {@code null_rows} hold one column per aggregated column ({@code aggregates} of them, at most
 * {@value #MAX_AGGREGATES}): a column's text per member ({@code ""} where null) and the member
 * positions whose value is null.
 *
 * @param groupKey the capture point's group key (non-empty): the {@code :MemberKey} it registers
 * @param pairs per member, the id the query service looks the member up by
 * @param nullMasks per member, bit {@code i} set when column {@code i} is null for it (the
 *     {@code null_rows} columns turned around: at most 64 columns fit one long)
 * @param lefts where the members are a join's rows that nothing else sent (sent as {@code
 *     lefts}), each member's left parent: the member is then its TIMES node, folded into its
 *     member edge (docs/graph-schema.md, "A join's rows folded into their member edges"); else
 *     empty
 * @param partners likewise each member's right parent ({@code partners}), or empty
 * @param split the split path of the members' TIMES nodes where they are stored unfolded (the
 *     members' block's {@code split})
 */
public record MemberBlock(
    String run,
    String groupKey,
    long[] members,
    long[] groups,
    long[] pairs,
    int aggregates,
    List<List<String>> values,
    long[] nullMasks,
    long[] lefts,
    long[] partners,
    List<String> split) {

  /** The most aggregated columns one block may carry (one bit each in a null mask). */
  static final int MAX_AGGREGATES = 64;

  /** Parses member block {@code position} of a call; a malformed one names itself and the field. */
  public static MemberBlock parse(Map<String, Object> map, int position) {
    BlockFields f = new BlockFields(map, "member block " + position);
    String run = f.string("run");
    String groupKey = f.string("group_key");
    if (groupKey.isEmpty()) {
      throw f.error("group_key", "is empty");
    }
    long[] members = f.longs("members");
    long[] groups = f.longs("groups");
    long[] pairs = f.longs("pairs");
    requirePerMember(f, "groups", groups.length, members.length);
    requirePerMember(f, "pairs", pairs.length, members.length);
    long aggregates = f.integer("aggregates");
    if (aggregates < 0 || aggregates > MAX_AGGREGATES) {
      throw f.error("aggregates", "is " + aggregates + ", must be 0 to " + MAX_AGGREGATES);
    }
    List<List<String>> values = f.stringColumns("values");
    requireColumns(f, "values", values.size(), aggregates);
    for (int i = 0; i < values.size(); i++) {
      if (values.get(i).size() != members.length) {
        throw f.error("values[" + i + "]", "has " + values.get(i).size() + " values for "
            + members.length + " members");
      }
    }
    List<long[]> nullRows = f.longColumns("null_rows");
    requireColumns(f, "null_rows", nullRows.size(), aggregates);
    // Absent from an ingest older than the fold: members stored as they are.
    long[] lefts = f.optionalLongs("lefts");
    long[] partners = f.optionalLongs("partners");
    if (lefts.length > 0) {
      requirePerMember(f, "lefts", lefts.length, members.length);
    }
    if (partners.length != lefts.length) {
      throw f.error("partners", "has " + partners.length + " ids for " + lefts.length + " lefts");
    }
    return new MemberBlock(
        run, groupKey, members, groups, pairs, (int) aggregates, values,
        nullMasks(f, nullRows, members.length), lefts, partners, f.optionalStrings("split"));
  }

  /** The member blocks of one call, in order. */
  public static List<MemberBlock> parseAll(List<Map<String, Object>> blocks) {
    if (blocks == null) {
      throw new IllegalArgumentException("members is null");
    }
    List<MemberBlock> out = new ArrayList<>(blocks.size());
    for (int b = 0; b < blocks.size(); b++) {
      out.add(parse(blocks.get(b), b));
    }
    return out;
  }

  private static void requirePerMember(BlockFields f, String field, int size, int members) {
    if (size != members) {
      throw f.error(field, "has " + size + " ids for " + members + " members");
    }
  }

  private static void requireColumns(BlockFields f, String field, int size, long aggregates) {
    if (size != aggregates) {
      throw f.error(field, "has " + size + " columns for " + aggregates + " aggregates");
    }
  }

  /** Per member, the columns that are null for it as bits; a row out of range is named. */
  private static long[] nullMasks(BlockFields f, List<long[]> nullRows, int members) {
    long[] masks = new long[members];
    for (int i = 0; i < nullRows.size(); i++) {
      long[] rows = nullRows.get(i);
      for (int j = 0; j < rows.length; j++) {
        if (rows[j] < 0 || rows[j] >= members) {
          throw f.error("null_rows[" + i + "][" + j + "]", "is " + rows[j]
              + ", out of range for " + members + " members");
        }
        masks[(int) rows[j]] |= 1L << i;
      }
    }
    return masks;
  }

  int size() {
    return members.length;
  }

  /** Members {@code from} (inclusive) to {@code to} (exclusive) as a block of their own. */
  MemberBlock slice(int from, int to) {
    List<List<String>> columns = new ArrayList<>(values.size());
    for (List<String> column : values) {
      columns.add(column.subList(from, to));
    }
    return new MemberBlock(
        run,
        groupKey,
        Arrays.copyOfRange(members, from, to),
        Arrays.copyOfRange(groups, from, to),
        Arrays.copyOfRange(pairs, from, to),
        aggregates,
        columns,
        Arrays.copyOfRange(nullMasks, from, to),
        folded() ? Arrays.copyOfRange(lefts, from, to) : lefts,
        folded() ? Arrays.copyOfRange(partners, from, to) : partners,
        split);
  }

  /** Whether the members are a join's rows, each folded into its member edge when stored. */
  boolean folded() {
    return lefts.length > 0;
  }

  /** Whether column {@code i} is null for member {@code k}. */
  boolean isNull(int i, int k) {
    return (nullMasks[k] & (1L << i)) != 0;
  }

  /** Member {@code k}'s value per column, {@code ""} where null. */
  String[] valuesOf(int k) {
    String[] out = new String[aggregates];
    for (int i = 0; i < aggregates; i++) {
      out[i] = isNull(i, k) ? "" : values.get(i).get(k);
    }
    return out;
  }

  /** The columns that are null for member {@code k}, in order (empty when none). */
  long[] nullColumnsOf(int k) {
    long[] out = new long[Long.bitCount(nullMasks[k])];
    int n = 0;
    for (int i = 0; i < aggregates; i++) {
      if (isNull(i, k)) {
        out[n++] = i;
      }
    }
    return out;
  }

  /** The columns with a value for member {@code k}: each stands for a TENSOR and a VALUE node. */
  int present(int k) {
    return aggregates - Long.bitCount(nullMasks[k]);
  }
}
