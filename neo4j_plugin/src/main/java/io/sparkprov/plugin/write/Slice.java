package io.sparkprov.plugin.write;

import java.util.ArrayList;
import java.util.List;

/**
 * One transaction's share of a {@code sparkprov.write} call: node blocks (with their positions in
 * the call, which the conflict report names), then member blocks, then edge blocks, in the
 * call's order. A call cut into slices of at most {@code records} entries (node ids, members,
 * edges) writes each slice in a transaction of its own: Neo4j commits many small transactions
 * faster than one large one (bench/README.md, "Transactions of the size the engine likes").
 */
record Slice(
    List<NodeBlock> blocks, List<Integer> positions, List<MemberBlock> members,
    List<EdgeBlock> edges) {

  /** The whole call as one slice. */
  static Slice whole(List<NodeBlock> blocks, List<MemberBlock> members, List<EdgeBlock> edges) {
    List<Integer> positions = new ArrayList<>(blocks.size());
    for (int b = 0; b < blocks.size(); b++) {
      positions.add(b);
    }
    return new Slice(blocks, positions, members, edges);
  }

  /** The call cut into slices of at most {@code records} entries each (at least one slice). */
  static List<Slice> cut(
      List<NodeBlock> blocks, List<MemberBlock> members, List<EdgeBlock> edges, int records) {
    if (records <= 0) {
      throw new IllegalArgumentException("tx_records is " + records + ", must be positive");
    }
    Cutter cutter = new Cutter(records);
    for (int b = 0; b < blocks.size(); b++) {
      NodeBlock block = blocks.get(b);
      int from = 0;
      do { // once at least: an empty block still names its run (and a member block its key)
        int to = Math.min(block.size(), from + cutter.room());
        cutter.current.blocks.add(from == 0 && to == block.size() ? block : block.slice(from, to));
        cutter.current.positions.add(b);
        cutter.took(to - from);
        from = to;
      } while (from < block.size());
    }
    for (MemberBlock block : members) {
      int from = 0;
      do {
        int to = Math.min(block.size(), from + cutter.room());
        cutter.current.members.add(from == 0 && to == block.size() ? block : block.slice(from, to));
        cutter.took(to - from);
        from = to;
      } while (from < block.size());
    }
    for (EdgeBlock block : edges) {
      int from = 0;
      do {
        int to = Math.min(block.size(), from + cutter.room());
        cutter.current.edges.add(from == 0 && to == block.size() ? block : block.slice(from, to));
        cutter.took(to - from);
        from = to;
      } while (from < block.size());
    }
    return cutter.done();
  }

  /** Entries of the slice: node ids, members and edges. */
  long records() {
    long n = 0;
    for (NodeBlock b : blocks) {
      n += b.size();
    }
    for (MemberBlock b : members) {
      n += b.size();
    }
    for (EdgeBlock b : edges) {
      n += b.size();
    }
    return n;
  }

  /** Fills slices of {@code records} entries, one after the other. */
  private static final class Cutter {
    private final int records;
    private final List<Slice> slices = new ArrayList<>();
    private Slice current = empty();
    private int used;

    Cutter(int records) {
      this.records = records;
    }

    private static Slice empty() {
      return new Slice(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
    }

    int room() {
      return records - used;
    }

    void took(int entries) {
      used += entries;
      if (used >= records) {
        slices.add(current);
        current = empty();
        used = 0;
      }
    }

    List<Slice> done() {
      boolean blank =
          current.blocks.isEmpty() && current.members.isEmpty() && current.edges.isEmpty();
      if (!blank || slices.isEmpty()) {
        slices.add(current);
      }
      return slices;
    }
  }
}
