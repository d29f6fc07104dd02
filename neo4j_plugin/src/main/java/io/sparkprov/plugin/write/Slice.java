package io.sparkprov.plugin.write;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;

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
      int position = b;
      cutter.add(blocks.get(b), blocks.get(b).size(), NodeBlock::slice, (slice, piece) -> {
        slice.blocks.add(piece);
        slice.positions.add(position);
      });
    }
    for (MemberBlock block : members) {
      cutter.add(
          block, block.size(), MemberBlock::slice, (slice, piece) -> slice.members.add(piece));
    }
    for (EdgeBlock block : edges) {
      cutter.add(
          block, block.size(), EdgeBlock::slice, (slice, piece) -> slice.edges.add(piece));
    }
    return cutter.done();
  }

  /** Entries {@code from} (inclusive) to {@code to} (exclusive) of a block, as a block. */
  private interface Piece<B> {
    B of(B block, int from, int to);
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

    /**
     * Puts a block of {@code size} entries into the slices, cut where a slice fills, each piece
     * given to {@code put} with the slice it goes to; an empty block too (it still names its run,
     * and a member block its key).
     */
    <B> void add(B block, int size, Piece<B> piece, BiConsumer<Slice, B> put) {
      int from = 0;
      do {
        int to = Math.min(size, from + records - used);
        put.accept(current, from == 0 && to == size ? block : piece.of(block, from, to));
        used += to - from;
        if (used >= records) {
          slices.add(current);
          current = empty();
          used = 0;
        }
        from = to;
      } while (from < size);
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
