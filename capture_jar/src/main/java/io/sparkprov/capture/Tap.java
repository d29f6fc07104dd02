package io.sparkprov.capture;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.roaringbitmap.longlong.Roaring64NavigableMap;

/**
 * One capture point: a non-deterministic, always-true filter over the tap's input struct
 * ({@link TapExpression}, fused into whole-stage codegen). Each
 * row's inputs are copied into the task's {@link Chunk}; a full chunk becomes one message (its
 * {@link Emission} in {@link Wire} format) handed to the {@link Sink}. When the task ends, the
 * last chunk is sent and every message of the task must be acknowledged, or the task fails with
 * an error named PublishError ({@link Failures}); then the task's counts go to the run's
 * {@link Counts}. A retried task
 * re-emits the same ids (they are Spark expressions of the data), which ingest stores once.
 */
public final class Tap
    implements Consumer<Object>, Supplier<Object>, Predicate<Object>, Serializable {
  private static final int MAX_UNACKNOWLEDGED = 32;

  /**
   * A capture point over a left outer join's pairs whose rows come grouped by left row, each
   * row's pairs one after another ({@link SemiJoins}): it keeps one pair per left row, or none,
   * and records the row once its last pair has passed. Each pair carries the left row's number
   * (the run) and, in the tap's third input, the matching right row's id (null where none
   * matches).
   */
  enum Runs {
    /** A semi join: a row with matches is kept (its first pair) and recorded with the ids of
     * all of them (the "witnesses" input); a row without is dropped. */
    SEMI,
    /** An anti join: a row without matches is kept, unrecorded; a row with matches is dropped
     * and recorded with the smallest of their ids (the "right" input). */
    ANTI,
    /** An existence join: every row is kept (its first pair); a row with matches is recorded
     * as a semi join's, with all of them, and as an anti join's excluded row, with the
     * smallest, by a second tap ({@link #over(Runs, Tap)}). */
    EXISTENCE
  }
  // The largest set of rows sent before that a tap skips: it travels with each of its tasks.
  static final long MAX_SKIPPED_BYTES = 4L << 20;

  private final TapPlan plan;
  private final Sink sink;
  private final Counts counts;
  private final Chunk.Slot[] slots; // how Spark holds each input; null: as the plan's types say
  private final int[] scales; // a DECIMAL input's scale
  // A source tap's rows sent before by the run with every value it keeps: not sent again
  // (SourceRowsOnce). Null: not looked up.
  private final Roaring64NavigableMap sentBefore;
  private final Runs runs; // null: every row is kept and recorded as it comes
  private final Tap excluded; // an existence join's anti join capture point; else null
  // A source tap above a join (SourceJoinsFirst): a row met again in a task is not sent again.
  private final boolean aboveJoin;
  // Spark deserializes the plan, and so this tap, once per task; the state is the task's.
  private transient TaskState state;
  // The taps keeping() and skippingRowsSentBefore() made of this one (on the driver, while the
  // plan is optimized): asked again, the same tap, so two copies of one subplan (an aggregation
  // Spark's optimizer copied, placed once) stay equal and Spark's exchange reuse runs it once.
  private transient java.util.Map<java.util.List<String>, Tap> keptAs;
  private transient Tap skipping;
  private transient Tap joined;

  public Tap(TapPlan plan, Sink sink, Counts counts) {
    this(plan, sink, counts, null, null, null, null, null, false);
  }

  private Tap(TapPlan plan, Sink sink, Counts counts, Chunk.Slot[] slots, int[] scales,
      Roaring64NavigableMap sentBefore, Runs runs, Tap excluded, boolean aboveJoin) {
    this.plan = plan;
    this.sink = sink;
    this.counts = counts;
    this.slots = slots;
    this.scales = scales;
    this.sentBefore = sentBefore;
    this.runs = runs;
    this.excluded = excluded;
    this.aboveJoin = aboveJoin;
  }

  /** This tap over a join's pairs grouped by left row ({@link Runs}): a semi join's capture
   * point (inputs id, left, witnesses) or an anti join's (id, left, right). */
  Tap over(Runs grouping) {
    if (grouping == Runs.EXISTENCE) {
      throw new IllegalArgumentException("an existence join's runs need its anti join's tap");
    }
    return over(grouping, null);
  }

  /** This semi join's tap over an existence join's pairs, recording the rows it excludes
   * through {@code anti}, the anti join's tap (its inputs id, left, right). */
  Tap over(Runs grouping, Tap anti) {
    String kind = grouping == Runs.ANTI ? "anti_join" : "semi_join";
    if (!plan.kind().equals(kind)) {
      throw new IllegalArgumentException("tap " + plan.key() + " is a " + plan.kind()
          + " capture point, not a " + kind + " one");
    }
    if ((grouping == Runs.EXISTENCE) != (anti != null)
        || anti != null && !anti.plan.kind().equals("anti_join")) {
      throw new IllegalArgumentException("tap " + plan.key()
          + ": an anti join's tap is given exactly for an existence join");
    }
    return new Tap(plan, sink, counts, slots, scales, sentBefore, grouping, anti, aboveJoin);
  }

  /** How this tap takes its rows: null when each is kept and recorded as it comes. */
  Runs runs() {
    return runs;
  }

  /** The input that holds a pair's right row id (its runs: {@link #over}). */
  int pairInput() {
    return plan.input(runs == Runs.ANTI ? "right" : "witnesses");
  }

  public TapPlan plan() {
    return plan;
  }

  /**
   * This tap for inputs Spark holds in {@code slots} (known once the plan is resolved), a
   * DECIMAL one at {@code scales[i]}.
   */
  Tap typed(Chunk.Slot[] slots, int[] scales) {
    if (slots.length != plan.width() || scales.length != plan.width()) {
      throw new IllegalStateException("tap " + plan.key() + " has " + plan.width()
          + " inputs, its expression " + slots.length);
    }
    return new Tap(plan, sink, counts, slots.clone(), scales.clone(), sentBefore, runs,
        excluded, aboveJoin);
  }

  /** This tap keeping only the attributes {@code kept} (their names, in the plan's order). A row
   * sent before with more values still needs none of them sent again. */
  synchronized Tap keeping(java.util.List<String> kept) {
    if (keptAs == null) {
      keptAs = new java.util.HashMap<>();
    }
    return keptAs.computeIfAbsent(java.util.List.copyOf(kept),
        names -> new Tap(plan.keeping(names), sink, counts, null, null, sentBefore, runs,
            excluded, aboveJoin));
  }

  /** This source tap not sending again the rows the run sent before with the values it keeps:
   * the positions {@link Counts#sentWith} says, read now (on the driver, while the plan is
   * optimized). */
  synchronized Tap skippingRowsSentBefore() {
    if (skipping == null) {
      skipping = lookedUp();
    }
    return skipping;
  }

  private Tap lookedUp() {
    Roaring64NavigableMap rows = counts.sentWith(plan.key(), plan.attributes());
    rows.runOptimize();
    if (rows.serializedSizeInBytes() > MAX_SKIPPED_BYTES) {
      rows = new Roaring64NavigableMap(); // too big to ship with every task: send them again
    }
    return new Tap(plan, sink, counts, slots, scales, rows, runs, excluded, aboveJoin);
  }

  /** This source tap above a join ({@link SourceJoinsFirst}): a row the join gives again (for
   * another partner) is sent once per task; the same tap when asked again. */
  synchronized Tap aboveJoin() {
    if (aboveJoin) {
      return this;
    }
    if (joined == null) {
      joined = new Tap(plan, sink, counts, slots, scales, sentBefore, runs, excluded, true);
    }
    return joined;
  }

  /** Whether {@link #aboveJoin()} was applied. */
  boolean sitsAboveJoin() {
    return aboveJoin;
  }

  /** Whether {@link #skippingRowsSentBefore} was applied. */
  boolean skipsRowsSentBefore() {
    return sentBefore != null;
  }

  int[] scales() {
    return scales != null ? scales.clone() : new int[plan.width()];
  }

  Chunk.Slot[] slots() {
    return slots != null ? slots.clone() : Chunk.defaultSlots(plan);
  }

  /**
   * Where the codegen tap ({@link TapExpression}) writes its next row before each {@link
   * #accept}: the arrays of this task's chunk, as {@link Chunk#writer} says.
   */
  @Override
  public Object get() {
    return taskState().writer;
  }

  /**
   * One pair of a tap over runs ({@link #over}): the pair written where {@link #get()} said,
   * its run (the left row's number) in the fifth array's one long. Whether the pair is kept.
   */
  @Override
  public boolean test(Object filled) {
    TaskState s = taskState();
    return s.matchRuns.pair(s.run[0]);
  }

  /** One row: the row written where {@link #get()} said, or an InternalRow of the inputs. */
  @Override
  public void accept(Object filled) {
    TaskState s = taskState();
    if (s.stopAfter != DiscardSink.Step.CALL) {
      if (filled instanceof org.apache.spark.sql.catalyst.InternalRow internal) {
        if (s.rowno >= 0 && s.skips(internal.getLong(s.rowno))) {
          return;
        }
        s.chunk.add(internal);
      } else {
        if (s.rowno >= 0 && s.skips(s.chunk.written(s.rowno))) {
          return; // written over by the next row
        }
        s.chunk.commit(s.refs);
      }
      s.sendIfFull();
    }
  }

  /** An existence join's rows excluded, recorded by its anti join's tap; the left row's id is
   * input {@code left} of the semi join's rows. */
  private record Excluding(int left, TaskState anti) implements MatchRuns.Excluded {
    @Override
    public void exclude(long leftId, long match) {
      anti.exclude(leftId, match);
    }
  }

  private TaskState taskState() {
    TaskState s = state;
    return s == null ? start() : s;
  }

  private TaskState start() {
    if (excluded != null) {
      // Started first: Spark calls completion listeners in reverse order, so this tap's last
      // row is recorded into it before it completes.
      excluded.taskState();
    }
    TaskContext task = TaskContext.get();
    int partition = task == null ? -1 : task.partitionId();
    TaskState s = new TaskState(partition);
    state = s;
    if (task != null) {
      task.addTaskFailureListener((org.apache.spark.util.TaskFailureListener)
          (context, error) -> s.failed = true);
      task.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener)
          context -> s.complete());
    }
    return s;
  }

  /** The messages of this tap in one task. */
  private final class TaskState {
    final Chunk chunk = new Chunk(plan, slots(), scales());
    final DiscardSink.Step stopAfter =
        sink instanceof DiscardSink discard ? discard.stopAfter() : DiscardSink.Step.ENCODE;
    final Object[] refs = new Object[plan.width()];
    // A tap over runs: the run of the pair being written, and the runs (MatchRuns).
    final long[] run = new long[1];
    final Object[] writer = runs == null ? chunk.writer(refs) : chunk.writer(refs, run);
    final MatchRuns matchRuns = runs == null ? null : new MatchRuns(runs, plan.key(), chunk,
        refs, pairInput(), stopAfter != DiscardSink.Step.CALL, this::sendIfFull,
        excluded == null ? null : new Excluding(plan.input("left"), excluded.taskState()));
    final byte[] key;
    final int partition;
    final ArrayDeque<Future<?>> unacknowledged = new ArrayDeque<>();
    int sequence;
    long sent;
    long acknowledged;
    long minId = Long.MAX_VALUE;
    // A source tap's positions sent: the rows it sees depend on the filters run before it
    // (SourceFiltersFirst), so its count is the union of every task's rows, not a per-task max.
    final Roaring64NavigableMap positions =
        Emission.Kind.of(plan.kind()) == Emission.Kind.SOURCE ? new Roaring64NavigableMap() : null;
    // The rows sent before (none: null) and where a row's position is.
    final Roaring64NavigableMap skip =
        sentBefore == null || sentBefore.isEmpty() ? null : sentBefore;
    // A tap above a join: the positions it has taken in this task.
    final MetPositions met = aboveJoin ? new MetPositions() : null;
    final int rowno = skip == null && !aboveJoin ? -1 : plan.input("rowno");
    long nodes;
    long edges;
    // Of them, a join's rows this members' tap sends for the join (Emission.joinNodeCount).
    long joinNodes;
    long joinEdges;
    boolean failed;

    TaskState(int partition) {
      this.partition = partition;
      this.key = (plan.runId() + "/" + plan.key() + "/" + partition)
          .getBytes(StandardCharsets.UTF_8);
    }

    /** Whether the row at {@code position} is not sent: sent before by the run, or, above a
     * join, taken before in this task (for another partner). */
    boolean skips(long position) {
      if (met != null && !met.firstTime(position)) {
        return true;
      }
      return skip != null && skip.contains(position);
    }

    void sendIfFull() {
      if (chunk.full()) {
        send();
      }
    }

    // An anti join's excluded rows' ids, from their left rows' (the tap's id input).
    final long excludedSeed = NodeIds.seed(plan.runId(), plan.key());

    /** An anti join's row excluded: its left row's node id and the smallest of its matches'
     * (an existence join's rows: {@link Runs#EXISTENCE}), as its capture point records it. */
    void exclude(long left, long match) {
      if (stopAfter == DiscardSink.Step.CALL) {
        return;
      }
      long[] cells = (long[]) writer[0];
      boolean[] nulls = (boolean[]) writer[1];
      int at = chunk.writing();
      int id = plan.input("id");
      int from = plan.input("left");
      int right = plan.input("right");
      cells[at + id] = XXH64.hashLong(left, excludedSeed);
      cells[at + from] = left;
      cells[at + right] = match;
      nulls[at + id] = false;
      nulls[at + from] = false;
      nulls[at + right] = false;
      chunk.commit(refs);
      sendIfFull();
    }

    void send() {
      if (stopAfter == DiscardSink.Step.COPY) {
        chunk.clear();
        return;
      }
      Emission e = Emission.of(plan, chunk);
      if (stopAfter == DiscardSink.Step.EMIT) {
        chunk.clear();
        return;
      }
      minId = Math.min(minId, chunk.minId());
      if (positions != null) {
        chunk.addPositionsTo(positions);
      }
      byte[] message = Wire.batch(plan, partition, sequence, e.nodes(), e.src(), e.dst(),
          e.members());
      while (unacknowledged.size() >= MAX_UNACKNOWLEDGED) {
        confirm(unacknowledged.poll());
      }
      unacknowledged.add(sink.send(key, message));
      sent++;
      sequence++;
      nodes += e.nodeCount();
      edges += e.edgeCount();
      joinNodes += e.joinNodeCount();
      joinEdges += e.joinEdgeCount();
      chunk.clear();
    }

    void complete() {
      if (failed) {
        return; // nothing counted: a retry sends the same lineage again
      }
      if (matchRuns != null) {
        matchRuns.close();
      }
      if (chunk.size() > 0) {
        send();
      }
      if (sent == 0) {
        return;
      }
      sink.flush();
      while (!unacknowledged.isEmpty()) {
        confirm(unacknowledged.poll());
      }
      if (positions != null && edges == 0) {
        counts.addRows(plan.key(), positions, plan.attributes());
      } else if (joinNodes > 0 && !plan.pairKey().isEmpty()) {
        // A join's rows sent by its members' tap count as the join's own capture point counts
        // them (the same key and smallest row id), so a job that stores them again through
        // that capture point does not count them twice.
        counts.add(plan.pairKey(), minId, joinNodes, joinEdges);
        counts.add(plan.key(), minId, nodes - joinNodes, edges - joinEdges);
      } else {
        counts.add(plan.key(), minId, nodes, edges);
      }
    }

    private void confirm(Future<?> future) {
      if (!future.isDone()) {
        sink.flush(); // the producer lingers to fill its batches: a task that waits sends them
      }
      try {
        future.get(sink.timeoutMs(), TimeUnit.MILLISECONDS);
        acknowledged++;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw error(e);
      } catch (Exception e) {
        throw error(e);
      }
    }

    private IllegalStateException error(Exception e) {
      return Failures.publish("lineage of tap " + plan.key() + " not acknowledged by "
          + sink.describe() + " within " + sink.timeoutMs() + " ms: " + sent
          + " messages sent by this partition, " + acknowledged + " acknowledged, "
          + (sent - acknowledged) + " unacknowledged", e);
    }
  }
}
