package io.sparkprov.capture;

import org.roaringbitmap.longlong.Roaring64NavigableMap;

/**
 * A semi or anti join's capture point over a left outer join's pairs, each left row's pairs one
 * after another (a run, named by the row's number): which pairs pass, and the chunk rows they
 * record ({@link Tap.Runs}). A row with matches is committed to the chunk at its first pair,
 * its values copied then (Spark may reuse their bytes), and held open: a semi join's row gets
 * the ids of all its matches, an anti join's the smallest, when its last pair has passed. Only
 * then may the chunk go ({@code closed}), so a chunk never travels with a row still open.
 */
final class MatchRuns {
  private static final long[] NO_IDS = {};

  private final Tap.Runs kind;
  private final String key;
  private final Chunk chunk;
  private final Object[] refs;
  private final int input; // the pair's right row id: one id per pair, null where none matches
  private final boolean record; // false: pairs pass as they should, nothing is kept
  private final Runnable closed;
  private final Excluded excluded; // an existence join's excluded rows; else null
  private long left; // the open run's left row id (an existence join's)
  private boolean open;
  private long current;
  private int held = -1;
  private final Emission.LongList witnesses = new Emission.LongList();
  private long smallest;
  // The runs passed: one that comes again means the join did not give a row's pairs together.
  private final Roaring64NavigableMap ended = new Roaring64NavigableMap();

  /**
   * Runs recorded into {@code chunk} (its writer's objects in {@code refs}), the pair's right
   * row id at input {@code input}, {@code closed} run once a row is complete (the chunk may be
   * sent then).
   */
  MatchRuns(Tap.Runs kind, String key, Chunk chunk, Object[] refs, int input, boolean record,
      Runnable closed, Excluded excluded) {
    if ((kind == Tap.Runs.EXISTENCE) != (excluded != null)) {
      throw new IllegalArgumentException("runs of " + key
          + ": the excluded rows' recorder is given exactly for an existence join");
    }
    this.kind = kind;
    this.key = key;
    this.chunk = chunk;
    this.refs = refs;
    this.input = input;
    this.record = record;
    this.closed = closed;
    this.excluded = excluded;
  }

  /** Where an existence join's matched rows go as an anti join's excluded rows: the left row's
   * id and the smallest of its matches' ids. */
  interface Excluded {
    /** The left row id is input {@link #left()} of the chunk's rows. */
    int left();

    void exclude(long left, long match);
  }

  /** The pair written at the chunk's next row, of run {@code run}: whether it passes. */
  boolean pair(long run) {
    boolean matched = !chunk.writtenNull(input);
    long match = chunk.written(input);
    if (open && run == current) {
      if (matched) { // the pairs of a row with matches all have one
        if (kind != Tap.Runs.ANTI) {
          witnesses.add(match);
        }
        smallest = Math.min(smallest, match);
      }
      return false;
    }
    int written = chunk.writing();
    close(); // may send the chunk: the pair then moves to where the next row is written
    chunk.moveWritten(written);
    if (ended.contains(run)) {
      throw new IllegalStateException("sparkprov: the pairs of one left row of " + key
          + " did not come together from the join, so its rows cannot be kept rightly: the"
          + " physical join does not stream its left side");
    }
    open = true;
    current = run;
    if (!matched) { // no right row matches: the row's only pair
      return kind != Tap.Runs.SEMI;
    }
    if (record) {
      if (kind != Tap.Runs.ANTI) {
        refs[input] = NO_IDS; // set when the run ends
        witnesses.clear();
        witnesses.add(match);
      }
      if (excluded != null) {
        left = chunk.written(excluded.left());
      }
      smallest = match;
      chunk.commit(refs);
      held = chunk.size() - 1;
    }
    return kind != Tap.Runs.ANTI;
  }

  /** The open run ended: its row, if it records one, complete. */
  void close() {
    if (!open) {
      return;
    }
    open = false;
    ended.addLong(current);
    if (held < 0) {
      return;
    }
    if (kind == Tap.Runs.ANTI) {
      chunk.setLong(held, input, smallest);
    } else {
      chunk.setArray(held, input, witnesses.toArray());
    }
    held = -1;
    if (excluded != null) {
      excluded.exclude(left, smallest);
    }
    closed.run();
  }
}
