package io.sparkprov.capture;

import io.sparkprov.capture.TapPlacement.Pending;
import io.sparkprov.capture.TapPlacement.Placed;
import io.sparkprov.capture.TapPlacement.UnsupportedPlan;
import io.sparkprov.shared.Salts;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.MakeDecimal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.UnscaledValue;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Expand;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import scala.jdk.javaapi.CollectionConverters;

/**
 * An Aggregate's placement (grouping.py's {@code _aggregate}): each input row is a member of its
 * group, whose id hashes the run, the capture key and each key with its null flag (a MEMBER tap
 * below the aggregation sends the members and their aggregated values); above it a GROUP tap
 * gives each group a DELTA node and an AGGREGATE node per aggregated column. A DISTINCT (keys,
 * no aggregates) is a DELTA per distinct key, fed by its copies. Over no keys, the one group's
 * id is a constant of the run, added above the aggregation so that an empty input still gives
 * Spark's one row. Over grouping sets, the Expand below copies each row once per set, keeping
 * its node.
 */
final class Aggregation {
  /** The grouping id column of grouping sets (Spark's VirtualColumn.groupingIdName). */
  private static final String GROUPING_ID = "spark_grouping_id";

  private Aggregation() {}

  /** One aggregated output column: the function's name and its one input. */
  record Aggregated(Attribute output, String function, Expression input) {}

  /**
   * A MEMBER capture point's inputs (grouping.py's {@code _member_tap}): the member's id, its
   * group's id, then each aggregate's input ({@code x0}, {@code x1}, ...); with the functions'
   * names and the salts of the groups' AGGREGATE nodes under {@code key}.
   */
  record MemberColumns(List<String> inputs, List<String> types, List<Expression> values,
      List<String> functions, List<Long> salts, List<Integer> valueOf) {
    /** Which input is the member's group id. */
    static final int GROUP = 1;

    /** Aggregates over one input ({@code sum(amount)}, {@code avg(amount)}) share one value
     * input: each distinct input is copied, encoded and sent once ({@link TapPlan#valueOf}). */
    static MemberColumns of(String key, Expression id, Expression group,
        List<Aggregated> aggregated) {
      MemberColumns m = new MemberColumns(new ArrayList<>(List.of("id", "group")),
          new ArrayList<>(List.of("id", "id")), new ArrayList<>(List.of(id, group)),
          new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
      List<Expression> distinct = new ArrayList<>();
      boolean shared = false;
      for (int i = 0; i < aggregated.size(); i++) {
        Expression input = aggregated.get(i).input();
        int column = indexOfSame(distinct, input);
        if (column < 0) {
          column = distinct.size();
          distinct.add(input);
          m.inputs.add("x" + column);
          m.types.add("text");
          m.values.add(input);
        }
        shared |= column != i;
        m.valueOf.add(column);
        m.functions.add(aggregated.get(i).function());
        m.salts.add(Salts.salt(key, i, "aggregate"));
      }
      if (!shared) {
        m.valueOf.clear();
      }
      return m;
    }

    private static int indexOfSame(List<Expression> inputs, Expression input) {
      for (int k = 0; k < inputs.size(); k++) {
        if (inputs.get(k).semanticEquals(input)) {
          return k;
        }
      }
      return -1;
    }
  }

  static Placed place(TapPlacement.Placement at, Aggregate node) {
    List<Expression> keys = new ArrayList<>(CollectionConverters.asJava(node.groupingExpressions()));
    List<Aggregated> aggregated = aggregated(node, keys);
    if (keys.isEmpty() && aggregated.isEmpty()) {
      throw new UnsupportedPlan("an aggregate with neither keys nor aggregates");
    }
    // Members that are a join's rows travel as the join's pairs of positions (frame.py's
    // materialize_with_origin). An unnamed join that only this aggregate reads (nothing but
    // projections between them: a filter would have placed the join's capture point) gets none
    // of its own: its TIMES nodes travel with the members, from the same pairs (Emission's
    // JOIN_MEMBER), so each joined row is written, copied and encoded once, not twice.
    Pending join = null;
    List<Attribute> pair = List.of();
    Placed child;
    if (node.child() instanceof Expand e) {
      child = groupingSets(at, e);
    } else {
      Placed placed = at.place(node.child());
      if (placed.pending() != null && placed.pending().plan().kind().equals("join")
          && placed.pending().plan().relation().isEmpty()) {
        join = placed.pending();
        pair = List.of((Attribute) join.inputs().get(1), (Attribute) join.inputs().get(2));
        child = placed;
      } else {
        child = at.materialize(placed, pair);
      }
    }
    CaptureRun run = at.run();
    String key = run.nextKey("group");
    Alias group = TapPlacement.alias(
        keys.isEmpty() ? at.nodeId(key)
            : at.nodeId(key, TapPlacement.Placement.keyInputs(keys).toArray(new Expression[0])),
        "group");
    // An aggregated input that is computed (l_extendedprice * (1 - l_discount)) is computed once,
    // in the projection below the capture point, where both it and the aggregate read it: Spark
    // shares nothing between two operators' expressions, and decimal arithmetic is dear.
    List<NamedExpression> added = new ArrayList<>();
    List<NamedExpression> outputs = new ArrayList<>();
    aggregated = computedOnce(node, aggregated, added, outputs);
    added.add(group);
    LogicalPlan members = TapPlacement.project(child.plan(), child.plan().output(),
        added.toArray(new NamedExpression[0]));

    MemberColumns columns = MemberColumns.of(key, child.id(), group.toAttribute(), aggregated);
    List<String> inputs = columns.inputs();
    List<String> types = columns.types();
    List<Expression> values = columns.values();
    List<String> functions = columns.functions();
    List<Long> salts = columns.salts();
    List<String> origins = child.origin().isEmpty() ? List.of() : List.of(child.origin());
    String pairKey = "";
    if (join != null) {
      inputs.addAll(List.of("left", "right"));
      types.addAll(List.of("id", "id"));
      values.addAll(pair);
      pairKey = join.plan().key();
      origins = join.plan().origins();
    }
    TapPlan memberTap = at.tapPlan(join != null ? "join_member" : "member", key + ":members", "",
        List.of(), inputs, types,
        TapPlacement.Placement.split(""), key, List.of(), List.of(), aggregated.size(), origins,
        pairKey, false, columns.valueOf());
    TapExpression memberCapture =
        new TapExpression(values, new Tap(memberTap, run.sink(), run.counts()));
    LogicalPlan tapped;
    Attribute groupKey = group.toAttribute();
    if (!keys.isEmpty() && ExtraOptimizations.enabled(FewerLayers.CONF)) {
      // One projection: the members' tap yields each row's group id, the key the aggregate
      // groups by (FewerLayers).
      Alias yielded = TapPlacement.alias(memberCapture.yielding(MemberColumns.GROUP), "group");
      List<NamedExpression> passed = new ArrayList<>();
      for (Attribute a : CollectionConverters.asJava(members.output())) {
        if (!a.exprId().equals(groupKey.exprId())) {
          passed.add(a);
        }
      }
      passed.add(yielded);
      tapped = new Project(TapPlacement.seq(passed), members);
      groupKey = yielded.toAttribute();
    } else {
      tapped = new Filter(memberCapture, members);
    }

    LogicalPlan grouped;
    Attribute id;
    if (keys.isEmpty()) {
      LogicalPlan aggregate = new Aggregate(node.groupingExpressions(),
          TapPlacement.seq(outputs), tapped, node.hint());
      Alias constant = TapPlacement.alias(at.nodeId(key), "id");
      grouped = TapPlacement.project(aggregate, aggregate.output(), constant);
      id = constant.toAttribute();
    } else {
      List<Expression> grouping = new ArrayList<>(keys);
      grouping.add(groupKey);
      Alias groupId = TapPlacement.alias(groupKey, "id");
      outputs.add(groupId);
      grouped = new Aggregate(TapPlacement.seq(grouping), TapPlacement.seq(outputs), tapped,
          node.hint());
      id = groupId.toAttribute();
    }
    List<String> groupInputs = new ArrayList<>(List.of("id"));
    List<String> groupTypes = new ArrayList<>(List.of("id"));
    List<Expression> groupValues = new ArrayList<>(List.of(id));
    for (int i = 0; i < aggregated.size(); i++) {
      groupInputs.add("x" + i);
      groupTypes.add("text");
      groupValues.add(aggregated.get(i).output());
    }
    TapPlan groupTap = at.tapPlan("group", key, "", List.of(), groupInputs, groupTypes,
        TapPlacement.Placement.split(""), "", functions, salts, 0, List.of(), false);
    return new Placed(grouped, TapPlacement.attributes(node.output()), id,
        new Pending(groupTap, groupValues, List.of()), "", java.util.Set.of(key));
  }

  /**
   * The Expand of grouping sets (ROLLUP, CUBE, GROUPING SETS) below an aggregate
   * (plan_capture.py's {@code _Expand}): each input row once per grouping set, every copy keeping
   * the row's node, so it is a member of one group per set; the grouping id is a key like any
   * other, so the sets' groups stay apart. The Expand that Spark writes for distinct aggregates
   * beside other aggregates (RewriteDistinctAggregates, no grouping id) fails naming it.
   */
  private static Placed groupingSets(TapPlacement.Placement at, Expand node) {
    boolean sets = false;
    for (Attribute a : CollectionConverters.asJava(node.output())) {
      sets |= a.name().equals(GROUPING_ID);
    }
    if (!sets) {
      throw new UnsupportedPlan("the Expand of distinct aggregates beside other aggregates"
          + " (each aggregate's rows are copied apart)");
    }
    Placed child = at.materialize(at.place(node.child()));
    List<scala.collection.immutable.Seq<Expression>> projections = new ArrayList<>();
    for (scala.collection.Seq<Expression> p : CollectionConverters.asJava(node.projections())) {
      List<Expression> copy = new ArrayList<>(CollectionConverters.asJava(p));
      copy.add(child.id());
      projections.add(TapPlacement.seq(copy));
    }
    List<Attribute> output = TapPlacement.attributes(node.output());
    Attribute id = TapPlacement.alias(child.id(), "id").toAttribute();
    output.add(id);
    LogicalPlan expanded = new Expand(TapPlacement.seq(projections), TapPlacement.seq(output),
        child.plan());
    return new Placed(expanded, TapPlacement.attributes(node.output()), id, null, child.origin(),
        child.idKeys());
  }

  /**
   * {@code aggregated} with each computed input replaced by a column: its alias goes to {@code
   * added} (one per distinct input: sum and avg of the same product share it), and {@code
   * outputs} receives the aggregate's output expressions reading those columns.
   */
  private static List<Aggregated> computedOnce(Aggregate node, List<Aggregated> aggregated,
      List<NamedExpression> added, List<NamedExpression> outputs) {
    java.util.Map<Expression, Attribute> columns = new java.util.HashMap<>();
    List<Aggregated> out = new ArrayList<>();
    int next = 0;
    for (NamedExpression named : CollectionConverters.asJava(node.aggregateExpressions())) {
      if (!TapPlacement.isAggregate((Expression) named)) {
        outputs.add(named);
        continue;
      }
      Aggregated a = aggregated.get(next++);
      Expression input = a.input();
      if (input instanceof Attribute || input.foldable()) {
        outputs.add(named);
        out.add(a);
        continue;
      }
      Attribute column = columns.computeIfAbsent(input.canonicalized(), k -> {
        Alias alias = TapPlacement.alias(input, "x" + added.size());
        added.add(alias);
        return alias.toAttribute();
      });
      outputs.add((NamedExpression) withInput((Expression) named, column));
      out.add(new Aggregated(a.output(), a.function(), column));
    }
    return out;
  }

  /** An aggregated output ({@code Alias}, a {@code MakeDecimal} of DecimalAggregates, the
   * {@code AggregateExpression}, its function, an {@code UnscaledValue}) with its one input,
   * the deepest of that chain, replaced by {@code column}. */
  private static Expression withInput(Expression e, Attribute column) {
    if (e instanceof AggregateFunction f) {
      Expression arg = CollectionConverters.asJava(f.children()).get(0);
      Expression replaced = arg instanceof UnscaledValue u
          ? u.withNewChildren(TapPlacement.seq(List.of(column))) : column;
      return f.withNewChildren(TapPlacement.seq(List.of(replaced)));
    }
    List<Expression> children = CollectionConverters.asJava(e.children());
    if (children.size() != 1) {
      throw new IllegalStateException("an aggregated output of more than one input: " + e);
    }
    return e.withNewChildren(TapPlacement.seq(List.of(withInput(children.get(0), column))));
  }

  /** The aggregated output columns, in order; a column that is a key or a function of the keys
   * (or a constant) aggregates nothing. Each must be one aggregate function of one input, as
   * the tracked groupBy().agg() takes them (plans.py's describe_aggregates). */
  private static List<Aggregated> aggregated(Aggregate node, List<Expression> keys) {
    List<Aggregated> out = new ArrayList<>();
    for (NamedExpression named : CollectionConverters.asJava(node.aggregateExpressions())) {
      Expression o = (Expression) named;
      if (!TapPlacement.isAggregate(o)) {
        continue;
      }
      Expression inner = o instanceof Alias a ? a.child() : o;
      if (inner instanceof MakeDecimal m) { // DecimalAggregates: a sum of the unscaled longs
        inner = m.child();
      }
      if (!(inner instanceof AggregateExpression ae)) {
        throw new UnsupportedPlan("the aggregate output " + o.sql()
            + " (each aggregated column must be one aggregate function)");
      }
      if (ae.isDistinct() || ae.filter().isDefined()) {
        throw new UnsupportedPlan("the aggregate " + o.sql() + " (DISTINCT or FILTER)");
      }
      AggregateFunction function = ae.aggregateFunction();
      List<Expression> args = CollectionConverters.asJava(function.children());
      if (args.size() != 1) {
        throw new UnsupportedPlan("the aggregate " + o.sql() + " of " + args.size() + " inputs");
      }
      Expression input = args.get(0) instanceof UnscaledValue u ? u.child() : args.get(0);
      out.add(new Aggregated(named.toAttribute(), function.prettyName().toUpperCase(Locale.ROOT),
          input));
    }
    return out;
  }
}
