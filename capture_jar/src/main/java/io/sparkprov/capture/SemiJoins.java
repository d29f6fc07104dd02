package io.sparkprov.capture;

import io.sparkprov.capture.TapPlacement.Pending;
import io.sparkprov.capture.TapPlacement.Placed;
import io.sparkprov.shared.Salts;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.MonotonicallyIncreasingID;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.aggregate.CollectList;
import org.apache.spark.sql.catalyst.expressions.aggregate.First;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys$;
import org.apache.spark.sql.catalyst.plans.ExistenceJoin;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.JoinType;
import org.apache.spark.sql.catalyst.plans.LeftOuter$;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.BROADCAST$;
import org.apache.spark.sql.catalyst.plans.logical.HintInfo;
import org.apache.spark.sql.catalyst.plans.logical.JoinHint;
import org.apache.spark.sql.catalyst.plans.logical.JoinStrategyHint;
import org.apache.spark.sql.catalyst.plans.logical.SHUFFLE_HASH$;
import org.apache.spark.sql.catalyst.plans.logical.SHUFFLE_MERGE$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;

/**
 * Left semi, left anti and existence joins (capture_agent/joins.py, on a condition, as plan
 * capture always joins): the join's rows are no fresh product of both sides, so the join is
 * rebuilt as the left rows, numbered, paired with the right rows by the join's own condition and
 * grouped back per left row. A semi join pairs them inner and collects the matches' ids: the
 * kept row is a TIMES of its left row and the sum of its matches (SemiJoinSpec). An anti join
 * pairs them left outer and takes the smallest match's id: a row with one gets an EXCLUDED node
 * (AntiJoinSpec) and is dropped, a row without one is kept with its own node. An existence join
 * is both, row by row.
 */
final class SemiJoins {
  private SemiJoins() {}

  /** The left rows, once each, under their own attributes and id, as a plan. */
  private record PerLeftRow(LogicalPlan plan, Attribute left) {}

  static Placed place(TapPlacement.Placement at, Join node) {
    Placed left = at.materialize(at.place(node.left()));
    Placed right = at.materialize(at.place(node.right()));
    boolean together = !at.underStreamingLimit() && ExtraOptimizations.enabled(TOGETHER);
    if (node.joinType() instanceof ExistenceJoin e) {
      return together
          ? existenceOfPairs(at, node, e.exists(), pairs(node, left, right), left, right)
          : existence(at, node, e.exists(), left, right);
    }
    boolean semi = node.joinType().toString().equals("LeftSemi");
    if (!together) {
      return semi ? semi(at, node, left, right) : anti(at, node, left, right);
    }
    Pairs pairs = pairs(node, left, right);
    return semi ? semiOfPairs(at, pairs, left, right) : antiOfPairs(at, pairs, left, right);
  }

  /** The Spark conf that turns off grouping a left row's matches where the join makes them
   * ("false": paired and grouped back by a shuffle, as before 2026-12-01). */
  static final String TOGETHER = "spark.sparkprov.matchesTogether";

  /**
   * A left outer join's pairs, each row's pairs one after another ({@link #pairs}): the left
   * rows numbered ({@code run}), their ids ({@code left}), each pair's right row id ({@code
   * right}, null where none matches).
   */
  private record Pairs(LogicalPlan plan, Attribute run, Attribute left, Attribute right) {}

  /**
   * The left rows, numbered, joined left outer to the right rows on the join's condition,
   * planned so that the left side streams ({@link #streamingLeft}): every physical join that
   * streams it gives a left row's pairs one after another, in the task that reads the row, and
   * a left outer join never splits a left row over tasks (skew handling splits only its left
   * side). The capture point checks it ({@link MatchRuns}).
   */
  private static Pairs pairs(Join node, Placed left, Placed right) {
    Alias run = TapPlacement.alias(new MonotonicallyIncreasingID(), "row");
    LogicalPlan numbered = TapPlacement.project(left.plan(), left.plan().output(), run);
    Join joined = new Join(numbered, right.plan(), LeftOuter$.MODULE$, node.condition(),
        JoinHint.NONE());
    JoinHint hint = streamingLeft(joined, node.hint());
    if (!hint.equals(JoinHint.NONE())) {
      joined = new Join(numbered, right.plan(), LeftOuter$.MODULE$, node.condition(), hint);
    }
    return new Pairs(SizedAsSemiJoin.over(joined), run.toAttribute(),
        TapPlacement.inOutput(joined, left.id()), TapPlacement.inOutput(joined, right.id()));
  }

  /**
   * The hint that keeps a left outer join's left side streamed. Spark builds a left outer
   * join's right side in a broadcast hash join and a sort merge join streams the left side;
   * what may build the left side is a shuffled hash join (chosen when sort merge joins are
   * not preferred) and, without an equality to join on, a nested loop join broadcasting the
   * smaller side. So: the semi join's own hint for its right side where it names a strategy
   * that builds the right side; none where Spark, as configured, can only choose a broadcast
   * of the right side or a sort merge join (adaptive execution too); else a broadcast of the
   * right side where Spark's estimate of its size is under the broadcast threshold, or where
   * no equality can be sorted on, and a sort merge join otherwise.
   */
  private static JoinHint streamingLeft(Join joined, JoinHint given) {
    if (given.rightHint().isDefined() && given.rightHint().get().strategy().isDefined()) {
      JoinStrategyHint strategy = given.rightHint().get().strategy().get();
      if (strategy == BROADCAST$.MODULE$ || strategy == SHUFFLE_MERGE$.MODULE$
          || strategy == SHUFFLE_HASH$.MODULE$) {
        return new JoinHint(scala.Option.empty(), given.rightHint());
      }
    }
    org.apache.spark.sql.internal.SQLConf conf = org.apache.spark.sql.internal.SQLConf.get();
    boolean equi = ExtractEquiJoinKeys$.MODULE$.unapply(joined).isDefined();
    if (equi && conf.preferSortMergeJoin()) {
      return JoinHint.NONE();
    }
    long threshold = conf.autoBroadcastJoinThreshold();
    boolean small = threshold >= 0
        && joined.right().stats().sizeInBytes().$less$eq(scala.math.BigInt.apply(threshold));
    JoinStrategyHint strategy = small || !equi ? BROADCAST$.MODULE$ : SHUFFLE_MERGE$.MODULE$;
    return new JoinHint(scala.Option.empty(),
        scala.Option.apply(new HintInfo(scala.Option.apply(strategy))));
  }

  /** A semi join's kept rows from the pairs: each a fresh TIMES node of its left row and its
   * matches, as {@link #semi}; the capture point, placed later, keeps a row's first pair and
   * records the row when its last pair has passed. */
  private static Placed semiOfPairs(TapPlacement.Placement at, Pairs pairs, Placed left,
      Placed right) {
    String key = at.run().nextKey("semijoin");
    Alias id = TapPlacement.alias(at.nodeId(key, pairs.left()), "id");
    List<NamedExpression> columns = new ArrayList<>(left.visible());
    columns.addAll(List.of(pairs.left(), pairs.run(), pairs.right(), id));
    Pending pending = new Pending(semiPlan(at, key, left, right),
        List.of(id.toAttribute(), pairs.left(), pairs.right()), List.of(), pairs.run());
    return new Placed(new Project(TapPlacement.seq(columns), pairs.plan()), left.visible(),
        id.toAttribute(), pending, "", Set.of(key));
  }

  /** An anti join's kept rows from the pairs, as {@link #anti}: a row without matches keeps its
   * node; a row with matches is dropped and recorded with the smallest of their ids. */
  private static Placed antiOfPairs(TapPlacement.Placement at, Pairs pairs, Placed left,
      Placed right) {
    String key = at.run().nextKey("antijoin");
    Alias excluded = TapPlacement.alias(at.nodeId(key, pairs.left()), "excluded");
    List<NamedExpression> columns = new ArrayList<>(left.visible());
    columns.addAll(List.of(pairs.left(), pairs.run(), pairs.right(), excluded));
    LogicalPlan plan = new Project(TapPlacement.seq(columns), pairs.plan());
    Tap tap = new Tap(antiPlan(at, key, left, right), at.run().sink(), at.run().counts())
        .over(Tap.Runs.ANTI);
    LogicalPlan kept = new Filter(new TapExpression(
        List.of(excluded.toAttribute(), pairs.left(), pairs.right()), tap, pairs.run()), plan);
    List<NamedExpression> output = new ArrayList<>(left.visible());
    output.add(pairs.left());
    return new Placed(new Project(TapPlacement.seq(output), kept), left.visible(), pairs.left(),
        null, left.origin(), left.idKeys());
  }

  /** A semi join's kept rows, each a fresh TIMES node (not placed yet, so the root may name
   * them): fed by its left row and by its matches (their sum, a PLUS, where more than one). */
  private static Placed semi(TapPlacement.Placement at, Join node, Placed left, Placed right) {
    Alias witnesses = witnesses(right);
    PerLeftRow kept = perLeftRow(node, left, right, Inner$.MODULE$, witnesses);
    String key = at.run().nextKey("semijoin");
    Alias id = TapPlacement.alias(at.nodeId(key, kept.left()), "id");
    LogicalPlan plan = TapPlacement.project(kept.plan(), kept.plan().output(), id);
    Pending pending = new Pending(semiPlan(at, key, left, right),
        List.of(id.toAttribute(), kept.left(), witnesses.toAttribute()), List.of());
    return new Placed(plan, left.visible(), id.toAttribute(), pending, "", Set.of(key));
  }

  /** An anti join's kept rows, which keep their nodes; the capture point before the drop
   * records each excluded row with the smallest id among its matches. */
  private static Placed anti(TapPlacement.Placement at, Join node, Placed left, Placed right) {
    Alias match = match(right);
    PerLeftRow every = perLeftRow(node, left, right, LeftOuter$.MODULE$, match);
    String key = at.run().nextKey("antijoin");
    Alias excluded = TapPlacement.alias(at.nodeId(key, every.left()), "excluded");
    LogicalPlan plan = TapPlacement.project(every.plan(), every.plan().output(), excluded);
    LogicalPlan recorded = new Filter(
        capture(at, antiPlan(at, key, left, right), excluded, every.left(),
            match.toAttribute()), plan);
    LogicalPlan kept = new Filter(new IsNull(match.toAttribute()), recorded);
    List<NamedExpression> columns = new ArrayList<>(left.visible());
    columns.add(every.left());
    return new Placed(new Project(TapPlacement.seq(columns), kept), left.visible(), every.left(),
        null, left.origin(), left.idKeys());
  }

  /** An existence join's rows from the pairs, as {@link #existence}: every left row once, a
   * row with matches a TIMES node of it and its matches, recorded as excluded from the anti
   * side too (one capture point records both, by the anti join's tap); a row without keeps its
   * node. */
  private static Placed existenceOfPairs(TapPlacement.Placement at, Join node, Attribute exists,
      Pairs pairs, Placed left, Placed right) {
    String semiKey = at.run().nextKey("semijoin");
    String antiKey = at.run().nextKey("antijoin");
    Alias times = TapPlacement.alias(at.nodeId(semiKey, pairs.left()), "times");
    List<NamedExpression> columns = new ArrayList<>(left.visible());
    columns.addAll(List.of(pairs.left(), pairs.run(), pairs.right(), times));
    LogicalPlan plan = new Project(TapPlacement.seq(columns), pairs.plan());
    Tap anti = new Tap(antiPlan(at, antiKey, left, right), at.run().sink(), at.run().counts());
    Tap tap = new Tap(semiPlan(at, semiKey, left, right), at.run().sink(), at.run().counts())
        .over(Tap.Runs.EXISTENCE, anti);
    LogicalPlan kept = new Filter(new TapExpression(
        List.of(times.toAttribute(), pairs.left(), pairs.right()), tap, pairs.run()), plan);
    return flagged(node, exists, left, kept, pairs.right(), pairs.left(), times, semiKey);
  }

  /**
   * An ExistenceJoin's output over {@code plan}: the left row's columns, the flag {@code exists}
   * (true where {@code matched} is not null), and the row's id: its own ({@code leftId}) without
   * a match, its semi join's TIMES node ({@code times}) with one.
   */
  private static Placed flagged(Join node, Attribute exists, Placed left, LogicalPlan plan,
      Attribute matched, Attribute leftId, Alias times, String semiKey) {
    Alias flag = new Alias(new IsNotNull(matched), exists.name(), exists.exprId(),
        exists.qualifier(), scala.Option.empty(), TapPlacement.seq(List.of()));
    Alias id = TapPlacement.alias(new If(new IsNull(matched), leftId, times.toAttribute()), "id");
    List<NamedExpression> output = new ArrayList<>(left.visible());
    output.add(flag);
    output.add(id);
    Set<String> keys = new HashSet<>(left.idKeys());
    keys.add(semiKey);
    return new Placed(new Project(TapPlacement.seq(output), plan),
        TapPlacement.attributes(node.output()), id.toAttribute(), null, "", keys);
  }

  /**
   * An ExistenceJoin (EXISTS or IN under OR): each left row with a flag saying whether a right
   * row matches it. plan_capture.py's {@code _existence} takes the rows with a match as a semi
   * join and those without as an anti join, in a union; here in one pass over the left rows
   * paired left outer: a row with a match is a TIMES node of it and its matches (its semi join
   * capture point sees only such rows) and is recorded as excluded from the anti side; a row
   * without one keeps its node.
   */
  private static Placed existence(TapPlacement.Placement at, Join node, Attribute exists,
      Placed left, Placed right) {
    Alias witnesses = witnesses(right);
    Alias match = match(right);
    PerLeftRow every = perLeftRow(node, left, right, LeftOuter$.MODULE$, witnesses, match);
    String semiKey = at.run().nextKey("semijoin");
    String antiKey = at.run().nextKey("antijoin");
    Alias times = TapPlacement.alias(at.nodeId(semiKey, every.left()), "times");
    Alias excluded = TapPlacement.alias(at.nodeId(antiKey, every.left()), "excluded");
    LogicalPlan plan = TapPlacement.project(every.plan(), every.plan().output(), times, excluded);
    Attribute matched = match.toAttribute();
    // Or evaluates its right side only where its left is false: the semi join's capture point
    // sees the rows with a match alone.
    LogicalPlan kept = new Filter(new Or(new IsNull(matched),
        capture(at, semiPlan(at, semiKey, left, right), times, every.left(),
            witnesses.toAttribute())), plan);
    LogicalPlan recorded = new Filter(
        capture(at, antiPlan(at, antiKey, left, right), excluded, every.left(), matched), kept);
    return flagged(node, exists, left, recorded, matched, every.left(), times, semiKey);
  }

  /** The ids of a left row's matches, collected. */
  private static Alias witnesses(Placed right) {
    return TapPlacement.alias(new CollectList(right.id()).toAggregateExpression(), "witnesses");
  }

  /** The smallest id among a left row's matches (null where none matches). */
  private static Alias match(Placed right) {
    return TapPlacement.alias(new Min(right.id()).toAggregateExpression(), "match");
  }

  /** A semi join's capture point (SemiJoinSpec): inputs id, left, witnesses; the sources
   * whose TOKEN ids the sides hold, if any, so that they travel as positions. */
  private static TapPlan semiPlan(TapPlacement.Placement at, String key, Placed left,
      Placed right) {
    return at.tapPlan("semi_join", key, "", List.of(), List.of("id", "left", "witnesses"),
        List.of("id", "id", "ids"), TapPlacement.Placement.split(""), "", List.of(),
        List.of(Salts.salt(key, "plus")), 0, origins(left, right), false);
  }

  /** An anti join's capture point (AntiJoinSpec): inputs id, left, right, and the sides'
   * sources as {@link #semiPlan}'s. */
  private static TapPlan antiPlan(TapPlacement.Placement at, String key, Placed left,
      Placed right) {
    return at.tapPlan("anti_join", key, "", List.of(), List.of("id", "left", "right"),
        List.of("id", "id", "id"), TapPlacement.Placement.split(""), "", List.of(),
        origins(left, right), false);
  }

  private static List<String> origins(Placed left, Placed right) {
    return List.of(left.origin(), right.origin());
  }

  /** The capture point {@code plan} (a Filter condition, always true), reading {@code inputs}
   * in order. */
  private static TapExpression capture(TapPlacement.Placement at, TapPlan plan,
      NamedExpression... inputs) {
    List<Expression> values = new ArrayList<>();
    for (NamedExpression e : inputs) {
      values.add(e.toAttribute());
    }
    return new TapExpression(values, new Tap(plan, at.run().sink(), at.run().counts()));
  }

  /**
   * joins.py's {@code _per_left_row} on a condition: the left rows numbered (the number only
   * tells rows apart; ids may repeat), joined {@code how} to the right rows on the join's
   * condition, and grouped by that number: each left column (and id) as it was, under its own
   * attribute, and the {@code combined} aggregates of the right ids.
   */
  private static PerLeftRow perLeftRow(Join node, Placed left, Placed right, JoinType how,
      Alias... combined) {
    Alias row = TapPlacement.alias(new MonotonicallyIncreasingID(), "row");
    LogicalPlan numbered = TapPlacement.project(left.plan(), left.plan().output(), row);
    LogicalPlan pairs = SizedAsSemiJoin.over(
        new Join(numbered, right.plan(), how, node.condition(), node.hint()));
    List<NamedExpression> outputs = new ArrayList<>();
    List<Attribute> columns = new ArrayList<>(left.visible());
    columns.add(left.id());
    for (Attribute c : columns) {
      outputs.add(new Alias(new First(c, false).toAggregateExpression(), c.name(), c.exprId(),
          c.qualifier(), scala.Option.empty(), TapPlacement.seq(List.of())));
    }
    outputs.addAll(List.of(combined));
    LogicalPlan grouped = new Aggregate(TapPlacement.seq(List.<Expression>of(row.toAttribute())),
        TapPlacement.seq(outputs), pairs, scala.Option.empty());
    return new PerLeftRow(grouped, TapPlacement.inOutput(grouped, left.id()));
  }
}
