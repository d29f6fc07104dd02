package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BitwiseXor;
import org.apache.spark.sql.catalyst.expressions.DynamicPruningSubquery;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.MonotonicallyIncreasingID;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.ScalarSubquery;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.optimizer.ReplaceCTERefWithRepartition$;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.BaseEvalPython;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.GlobalLimit;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LeafNode;
import org.apache.spark.sql.catalyst.plans.logical.LocalLimit;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OneRowRelation;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Repartition;
import org.apache.spark.sql.catalyst.plans.logical.RepartitionByExpression;
import org.apache.spark.sql.catalyst.plans.logical.Sort;
import org.apache.spark.sql.catalyst.plans.logical.Subquery;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.plans.logical.Window;
import org.apache.spark.sql.catalyst.plans.logical.WindowGroupLimit;
import org.apache.spark.sql.catalyst.plans.logical.WithCTE;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand;
import org.apache.spark.sql.execution.datasources.WriteFiles;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The capture extension's optimizer rule ({@link CaptureExtension}): places capture points into a
 * query's own optimized plan, as capture_agent/plan_capture.py does by rebuilding the plan with
 * the tracked operators, and with the same graph per operator (docs/capture.md): every rewritten
 * node keeps its output attributes and adds a hidden {@code __sp_id} (the row's provenance node),
 * and a fresh node's capture point is a {@code Filter(}{@link TapExpression}{@code )} that fuses
 * into whole-stage codegen. The root's rows are named {@code result<n>}, and a final projection
 * gives the query its own output again.
 *
 * <p>Handled: leaves (sources, positioned by partition and offset), Filter, Project, Sort,
 * limits and repartitions (a row keeps its node), inner, cross and outer joins (a TIMES per
 * pair), aggregates of one-input functions (members, a DELTA per group, an AGGREGATE per
 * aggregated column; over grouping sets too), unions (a row keeps its node, or a later side
 * gets a PLUS per row where the sides may hold the same nodes), left semi joins (a TIMES of the
 * row and its matches), left anti joins (a row keeps its node; an excluded one is recorded) and
 * existence joins (either, by row: {@link SemiJoins}). Any other operator fails the query with
 * {@link UnsupportedPlan} naming it: never a result without its lineage. Plans left as they
 * are: when {@value #CONF} is false, when the driver thread's local property {@value #SKIP} is
 * true (sparkprov's own queries), commands, subquery plans, streaming plans, and plans that hold
 * a capture point already (a {@code ProvenanceSession}'s). A dynamic partition pruning subquery
 * only filters a scan's files: the rows it lets through keep their lineage, so it stays as it
 * is.
 */
public final class TapPlacement extends Rule<LogicalPlan> {
  public static final TapPlacement INSTANCE = new TapPlacement();
  /** The Spark conf that turns the extension's capture off ("false"). */
  public static final String CONF = "spark.sparkprov.capture";
  /** The local property under which the driver's queries are not captured. */
  public static final String SKIP = "sparkprov.skip";

  static final String HIDDEN = "__sp_";
  /** The source a query without FROM reads (plan_capture.py names it so too). */
  static final String ONE_ROW = "one_row";
  private static final String MAIN_SPLIT = "main";

  private TapPlacement() {}

  /** A query the extension cannot capture: fails it with the operator's name. */
  public static final class UnsupportedPlan extends RuntimeException {
    UnsupportedPlan(String what) {
      super("sparkprov cannot capture " + what + " from the plan (yet): set " + CONF
          + "=false to run such a query without provenance");
    }
  }

  @Override
  public String ruleName() {
    return "io.sparkprov.capture.TapPlacement";
  }

  @Override
  public LogicalPlan apply(LogicalPlan given) {
    if (!ExtraOptimizations.enabled(CONF) || skipped() || given instanceof Subquery
        || given.isStreaming() || holdsTap(given)) {
      return given;
    }
    LogicalPlan plan = withoutCtes(given);
    if (plan instanceof InsertIntoHadoopFsRelationCommand write) { // df.write to files
      Placement placement = new Placement(CaptureRun.of(activeContext()));
      String relation = RelationNames.ofPath(outputPath(write));
      LogicalPlan query = write.query();
      if (query instanceof WriteFiles files) { // planned writes (V1Writes): the rows below it
        query = files.withNewChildren(seq(List.of(placement.root(files.child(), relation))));
      } else {
        query = placement.root(query, relation);
      }
      return write.withNewChildren(seq(List.of(query)));
    }
    if (plan instanceof Command) { // catalog and session commands, other writes: not captured
      return plan;
    }
    return new Placement(CaptureRun.of(activeContext())).root(plan, null);
  }

  /**
   * The plan with its common table expressions in place of their references, as Spark's last
   * optimizer batch puts them after capture's rules (ReplaceCTERefWithRepartition): a CTE kept
   * apart (read more than once, or a scalar subquery merged with another) is then placed where
   * each reference reads it, and its rows' capture points publish per reference.
   */
  static LogicalPlan withoutCtes(LogicalPlan plan) {
    return anyNode(plan, node -> node instanceof WithCTE)
        ? ReplaceCTERefWithRepartition$.MODULE$.apply(plan) : plan;
  }

  /** Whether a node of {@code plan} (its subqueries' plans aside) is {@code wanted}. */
  private static boolean anyNode(LogicalPlan plan,
      java.util.function.Predicate<LogicalPlan> wanted) {
    boolean[] found = {false};
    plan.foreach(new scala.runtime.AbstractFunction1<LogicalPlan, scala.runtime.BoxedUnit>() {
      @Override
      public scala.runtime.BoxedUnit apply(LogicalPlan node) {
        found[0] |= wanted.test(node);
        return scala.runtime.BoxedUnit.UNIT;
      }
    });
    return found[0];
  }

  /** The last part of the folder a write writes to. Read by reflection: its type is Hadoop's
   * Path, and the jar compiles without Hadoop. */
  private static String outputPath(InsertIntoHadoopFsRelationCommand write) {
    try {
      String path = String.valueOf(write.getClass().getMethod("outputPath").invoke(write));
      String trimmed = path.replaceAll("[/\\\\]+$", "");
      return trimmed.substring(Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\')) + 1);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot read a write's output path", e);
    }
  }

  private static boolean skipped() {
    SparkContext sc = activeContext();
    return sc == null || "true".equals(sc.getLocalProperty(SKIP));
  }

  /** The SparkContext of the session optimizing the plan, or null. */
  private static SparkContext activeContext() {
    scala.Option<org.apache.spark.sql.SparkSession> session =
        org.apache.spark.sql.SparkSession.getActiveSession();
    return session.isEmpty() ? null : session.get().sparkContext();
  }

  static boolean holdsTap(LogicalPlan plan) {
    return anyNode(plan, node -> {
      for (Expression e : CollectionConverters.asJava(node.expressions())) {
        for (Expression sub : PlanFacts.subtree(e)) {
          if (sub instanceof TapExpression) {
            return true;
          }
        }
      }
      return false;
    });
  }

  /**
   * A rewritten node: its plan (the node's output, then hidden columns), the attribute holding
   * each row's node id, the capture point that still has to publish the rows' fresh nodes (so
   * the root can name them), and the source key whose TOKEN ids the id column holds as they
   * are ("" when none: a join then sends that side as ids, not positions), and the capture keys
   * of the nodes the id column may hold (frame.py's {@code id_keys}: a union whose sides may
   * hold the same node gives the later side fresh nodes, {@link Unions}).
   */
  record Placed(LogicalPlan plan, List<Attribute> visible, Attribute id, Pending pending,
      String origin, Set<String> idKeys) {}

  /**
   * A capture point not placed yet: its plan and its input expressions, in the plan's order;
   * over a semi join's pairs ({@link SemiJoins}), {@code run}, the left row number its pairs are
   * grouped by, else null: the plan holds each pair until the capture point is placed.
   */
  record Pending(TapPlan plan, List<Expression> inputs, List<Attribute> attributes,
      Attribute run) {
    Pending(TapPlan plan, List<Expression> inputs, List<Attribute> attributes) {
      this(plan, inputs, attributes, null);
    }

    Pending named(String relation, List<String> names, List<Attribute> kept, String[] split) {
      TapPlan p = plan;
      return new Pending(new TapPlan(p.kind(), p.key(), p.runId(), p.workflow(), relation, names,
          p.inputs(), p.inputTypes(), List.of(split), p.label(), p.module(), p.functions(),
          p.groupKey(), p.delta(), p.aggregates(), p.salts(), p.origins(), p.pairKey(),
          p.rowsPerMessage(), p.maxTextBytes(), p.valuesRead(), p.valueOf()), inputs, kept, run);
    }
  }

  /** One query's placement, within its run. */
  static final class Placement {
    private final CaptureRun run;
    private final Map<String, Integer> relations = new HashMap<>();
    /** Subplans placed already, read again above (a window's numbered rows): as they are. */
    private final Map<LogicalPlan, Placed> placedAlready = new java.util.IdentityHashMap<>();
    /**
     * Aggregations placed already, by their plan: Spark's optimizer copies one (an IN
     * subquery's, TPC-H q18's, pushed as a semi join to both sides of a join), and each copy
     * placed on its own would be a capture point of its own, run and sent twice. Placed once,
     * both copies are one plan that Spark's exchange reuse runs once, and one set of nodes.
     */
    private final Map<LogicalPlan, Placed> aggregationsPlaced = new HashMap<>();
    /** Capture points placed ({@link #materialize}), by the placed plan they were placed over. */
    private final Map<Placed, Placed> materialized = new java.util.IdentityHashMap<>();
    /**
     * Capture points by their plan: two with the same plan (the same key: a source read again)
     * are one tap, so copies of one subplan over it stay equal and Spark's exchange reuse runs
     * them once (a broadcast side read by several joins).
     */
    private final Map<TapPlan, Tap> taps = new HashMap<>();
    /** In-memory sources placed already, in this query ({@link #sameSource}). */
    private final List<InMemorySource> sources = new ArrayList<>();
    // How many limits read the node being placed with nothing between that reads all its rows.
    private int streamingLimits;

    Placement(CaptureRun run) {
      this.run = run;
    }

    /** {@code plan} placed, its rows named {@code relation} (a result<n> when null). */
    LogicalPlan root(LogicalPlan plan, String given) {
      Placed top = place(plan);
      String relation = given != null ? given : run.nextResult();
      run.placed(relation);
      List<Attribute> visible = top.visible();
      List<String> names = uniqueNames(visible);
      Placed named;
      if (top.pending() != null && top.pending().plan().relation().isEmpty()) {
        named = new Placed(top.plan(), visible, top.id(),
            top.pending().named(relation, names, visible, split(relation)), "", top.idKeys());
      } else {
        named = plus(materialize(top), run.nextKey("named:" + relation), relation, names);
      }
      Placed done = materialize(named);
      return FewerLayers.tapsRead(new Project(
          seq(new ArrayList<NamedExpression>(CollectionConverters.asJava(plan.output()))),
          done.plan()));
    }

    /** {@code placed}, returned as it is wherever its plan is placed again. */
    Placed placedAlready(Placed placed) {
      placedAlready.put(placed.plan(), placed);
      return placed;
    }

    /** Whether {@code plan}'s rows are, with no aggregation between, the rows of a subplan
     * placed already (a window's numbered rows). */
    boolean readsPlacedAgain(LogicalPlan plan) {
      if (placedAlready.containsKey(plan)) {
        return true;
      }
      if (plan instanceof Aggregate) {
        return false;
      }
      for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
        if (readsPlacedAgain(child)) {
          return true;
        }
      }
      return false;
    }

    /**
     * Whether the node being placed is read by a limit with no operator between that reads
     * all its input first (a sort, an aggregation, a window): the limit may stop its rows
     * midway, so a semi or anti join there cannot wait for a row's last pair ({@link
     * SemiJoins}).
     */
    boolean underStreamingLimit() {
      return streamingLimits > 0;
    }

    Placed place(LogicalPlan node) {
      int saved = streamingLimits;
      if (node instanceof Sort || node instanceof Aggregate || node instanceof Window) {
        streamingLimits = 0;
      } else if (node instanceof GlobalLimit || node instanceof LocalLimit) {
        streamingLimits++;
      }
      try {
        return placeNode(node);
      } finally {
        streamingLimits = saved;
      }
    }

    private Placed placeNode(LogicalPlan node) {
      Placed known = placedAlready.get(node);
      if (known != null) {
        return known;
      }
      boolean scalar = false;
      for (Expression e : CollectionConverters.asJava(node.expressions())) {
        for (Expression sub : PlanFacts.subtree(e)) {
          scalar |= sub instanceof ScalarSubquery;
          if (sub instanceof SubqueryExpression && !(sub instanceof DynamicPruningSubquery)
              && !(sub instanceof ScalarSubquery)) {
            throw new UnsupportedPlan("a " + sub.getClass().getSimpleName() + " expression");
          }
        }
      }
      if (scalar) {
        return ScalarSubqueries.place(this, node);
      }
      if (node instanceof LeafNode) {
        return source(node);
      }
      if (node instanceof Project p) {
        return projection(p);
      }
      if (node instanceof Filter || node instanceof Sort || node instanceof GlobalLimit
          || node instanceof LocalLimit || node instanceof Repartition
          || node instanceof RepartitionByExpression || node instanceof WindowGroupLimit) {
        return passThrough(node);
      }
      if (node instanceof Join j) {
        return join(j);
      }
      if (node instanceof Aggregate a) {
        Placed same = aggregationsPlaced.get(a);
        if (same == null) {
          LogicalPlan simpler = AggregateShapes.simplified(a);
          same = simpler == a ? Aggregation.place(this, a) : place(simpler);
          aggregationsPlaced.put(a, same);
        }
        return same;
      }
      if (node instanceof Union u) {
        return Unions.place(this, u);
      }
      if (node instanceof Window w) {
        return Windows.place(this, w);
      }
      if (node instanceof BaseEvalPython e) {
        return pythonFunctions(e);
      }
      throw new UnsupportedPlan("the plan operator " + node.nodeName());
    }

    /** A leaf's rows as a source: a TOKEN per row, labelled by its file and row index where
     * the scan gives them ({@link FilePositions}), else by its partition and offset. */
    private Placed source(LogicalPlan leaf) {
      FilePositions files = FilePositions.of(leaf);
      InMemorySource same = files == null ? sameSource(leaf) : null;
      String relation = same != null ? same.relation() : relationName(leaf);
      // Files read again in the run (a self-join, a subquery, a later query) are the same
      // source, as one ProvenanceSession source read by many queries (CaptureRun.fileSource).
      // Other rows' positions are Spark's partition and offset, which another scan may number
      // otherwise: a source of their own each time.
      String key;
      if (files != null) {
        CaptureRun.FileSource source = run.fileSource(relation, files.files());
        key = source.key();
        relation = source.relation();
      } else if (same != null) {
        key = same.key();
      } else {
        key = run.nextKey("source:" + relation);
        if (repeatable(leaf)) {
          sources.add(new InMemorySource(leaf, key, relation));
        }
      }
      long mask = NodeIds.seed(run.runId(), key);
      List<Attribute> visible = attributes(leaf.output());
      boolean read = !"all".equals(
          org.apache.spark.sql.internal.SQLConf.get().getConfString(CaptureRun.VALUES, "read"));
      TapPlan tap = tapPlan("source", key, relation, uniqueNames(visible),
          List.of("id", "rowno"), List.of("id", "id"), split(relation), "", List.of(), List.of(),
          read);
      if (files != null) {
        run.sourceFiles(relation, files.files(), mask);
        return filePositioned(files, tap, mask, visible, key);
      }
      // A partition and offset: numbered once, below the capture point (the counter moves with
      // every evaluation, so the tap and the id read the one column).
      Alias rowno = alias(new MonotonicallyIncreasingID(), "rowno");
      Alias id = alias(new BitwiseXor(rowno.toAttribute(), new RunConstant(mask)), "id");
      LogicalPlan numbered = project(leaf, leaf.output(), rowno);
      LogicalPlan plan = project(numbered, numbered.output(), id);
      Pending pending = new Pending(tap, List.of(id.toAttribute(), rowno.toAttribute()), visible);
      return materialize(new Placed(plan, visible, id.toAttribute(), pending, key, Set.of(key)));
    }

    /**
     * A file source: the capture point right over the scan, reading the position and the id as
     * expressions, and the id projected above it, as the optimizer leaves a ProvenanceSession's
     * source: a filter over the source then goes between the two ({@link #passThrough}), where
     * {@link SourceFiltersFirst} finds it and runs it first, and {@link SourceRowsOnce} finds
     * the capture point's positions.
     */
    private Placed filePositioned(FilePositions files, TapPlan tap, long mask,
        List<Attribute> visible, String key) {
      Expression id = new BitwiseXor(files.position(), new RunConstant(mask));
      List<Expression> inputs = new ArrayList<>(List.of(id, files.position()));
      inputs.addAll(visible);
      LogicalPlan tapped = new Filter(
          new TapExpression(inputs, tap(tap)), files.scan());
      Alias idColumn = alias(id, "id");
      List<NamedExpression> columns = new ArrayList<>(visible);
      columns.add(idColumn);
      return new Placed(new Project(seq(columns), tapped), visible, idColumn.toAttribute(), null,
          key, Set.of(key));
    }

    /** A projection: each row keeps its node; a fresh node not placed yet moves past it, so the
     * root can name it (frame.py's _carry_pending). */
    private Placed projection(Project p) {
      return projection(p, place(p.child()));
    }

    /** {@code p} over its child, placed already. */
    Placed projection(Project p, Placed placed) {
      Placed child = placed;
      if (child.pending() != null && !child.pending().plan().relation().isEmpty()) {
        child = materialize(child);
      }
      List<NamedExpression> list = new ArrayList<>(CollectionConverters.asJava(p.projectList()));
      Set<Long> listed = new HashSet<>();
      for (NamedExpression e : list) {
        listed.add(e.exprId().id());
      }
      List<Attribute> carried = new ArrayList<>();
      carried.add(child.id());
      if (child.pending() != null) {
        for (Expression e : child.pending().inputs()) {
          carried.add((Attribute) e);
        }
        if (child.pending().run() != null) {
          carried.add(child.pending().run());
        }
      }
      for (Attribute a : carried) {
        if (listed.add(a.exprId().id())) {
          list.add(a);
        }
      }
      return new Placed(new Project(seq(list), child.plan()), attributes(p.output()), child.id(),
          child.pending(), child.origin(), child.idKeys());
    }

    /** Filters, sorts, limits, repartitions: each row keeps its node. */
    private Placed passThrough(LogicalPlan node) {
      return passThrough(node, place(node.children().head()));
    }

    /** {@code node} over its child, placed already. */
    Placed passThrough(LogicalPlan node, Placed placed) {
      Placed child = materialize(placed);
      LogicalPlan plan;
      if (node instanceof Filter filter && child.plan() instanceof Project p
          && p.child() instanceof Filter tap && SourceFiltersFirst.isSourceTap(tap.condition())) {
        // A filter over a file source: below the id's projection, over its capture point.
        plan = p.withNewChildren(seq(List.of(filter.withNewChildren(seq(List.of(tap))))));
      } else {
        plan = node.withNewChildren(seq(List.of(child.plan())));
      }
      return new Placed(plan, attributes(node.output()), child.id(), null, child.origin(),
          child.idKeys());
    }

    /** Inner, cross and outer joins: a TIMES node per joined row, fed by its rows (of its one
     * side where an outer join found no partner): frame.py's join. Semi and anti joins: {@link
     * SemiJoins}. */
    private Placed join(Join j) {
      String type = j.joinType().toString();
      if (Set.of("LeftSemi", "LeftAnti").contains(type) || type.startsWith("ExistenceJoin")) {
        return SemiJoins.place(this, j);
      }
      if (!Set.of("Inner", "Cross", "LeftOuter", "RightOuter", "FullOuter").contains(type)) {
        throw new UnsupportedPlan("a " + type + " join");
      }
      Placed left = materialize(place(j.left()));
      Placed right = materialize(place(j.right()));
      LogicalPlan joined = j.withNewChildren(seq(List.of(left.plan(), right.plan())));
      Attribute l = inOutput(joined, left.id());
      Attribute r = inOutput(joined, right.id());
      String key = run.nextKey("join");
      Alias id = alias(nodeId(key, l, r), "id");
      LogicalPlan plan = project(joined, joined.output(), id);
      TapPlan tap = tapPlan("join", key, "", List.of(), List.of("id", "left", "right"),
          List.of("id", "id", "id"), split(""), "", List.of(),
          List.of(left.origin(), right.origin()), false);
      Pending pending = new Pending(tap, List.of(id.toAttribute(), l, r), List.of());
      return new Placed(plan, attributes(j.output()), id.toAttribute(), pending, "", Set.of(key));
    }

    /** {@code placed} with its pending capture point placed, keeping its visible columns and
     * id only. */
    Placed materialize(Placed placed) {
      return materialize(placed, List.of());
    }

    /** As {@link #materialize(Placed)}, keeping {@code kept} hidden columns too (a join's pair,
     * for the members above it). A source's capture point stays the top of its plan, with no
     * projection above it: a filter over the source then meets it there and runs first
     * ({@link SourceFiltersFirst}), as it does over a ProvenanceSession's source. */
    Placed materialize(Placed placed, List<Attribute> kept) {
      if (placed.pending() == null) {
        return placed;
      }
      if (!kept.isEmpty()) {
        return capturePoint(placed, kept);
      }
      // once per placed plan: a copy of an aggregation placed once (aggregationsPlaced) gets
      // the same capture point
      Placed done = materialized.get(placed);
      if (done == null) {
        done = capturePoint(placed, kept);
        materialized.put(placed, done);
      }
      return done;
    }

    /** {@code placed}'s pending capture point, placed now. */
    private Placed capturePoint(Placed placed, List<Attribute> kept) {
      Pending pending = placed.pending();
      List<Expression> inputs = new ArrayList<>(pending.inputs());
      inputs.addAll(pending.attributes());
      Tap tap = tap(pending.plan());
      int own = ownId(pending, placed.id());
      if (own >= 0 && ExtraOptimizations.enabled(FewerLayers.CONF)) {
        // One projection: the tap captures the row and yields its id, which the plan computed
        // below it (FewerLayers then merges that projection into this one).
        Alias id = alias(new TapExpression(inputs, tap).yielding(own), "id");
        List<NamedExpression> columns = new ArrayList<>(placed.visible());
        columns.add(id);
        columns.addAll(kept);
        return new Placed(new Project(seq(columns), placed.plan()), placed.visible(),
            id.toAttribute(), null, placed.origin(), placed.idKeys());
      }
      LogicalPlan tapped = new Filter(pending.run() == null ? new TapExpression(inputs, tap)
          : new TapExpression(inputs, tap.over(Tap.Runs.SEMI), pending.run()), placed.plan());
      if (pending.plan().kind().equals("source")) {
        return new Placed(tapped, placed.visible(), placed.id(), null, placed.origin(),
            placed.idKeys());
      }
      List<NamedExpression> columns = new ArrayList<>(placed.visible());
      columns.add(placed.id());
      columns.addAll(kept);
      return new Placed(new Project(seq(columns), tapped), placed.visible(), placed.id(), null,
          placed.origin(), placed.idKeys());
    }

    /** Which of {@code pending}'s inputs is its row's own id {@code id}, where its tap may
     * yield it ({@link TapExpression#yielding}): a tap that takes every row and is no source's
     * (a source's stays a filter, for {@link SourceFiltersFirst}); else -1. */
    private static int ownId(Pending pending, Attribute id) {
      if (pending.run() != null || pending.plan().kind().equals("source")) {
        return -1;
      }
      List<Expression> inputs = pending.inputs();
      for (int i = 0; i < inputs.size() && i < pending.plan().inputs().size(); i++) {
        if (inputs.get(i) instanceof Attribute a && a.exprId().equals(id.exprId())
            && pending.plan().inputTypes().get(i).equals("id") && !a.nullable()
            && a.dataType() instanceof org.apache.spark.sql.types.LongType) {
          return i;
        }
      }
      return -1;
    }

    /** {@code parent}'s rows as fresh PLUS nodes (key {@code key}), each fed by its row, named
     * {@code relation} with {@code names} when one is given (frame.py's {@code _fresh} with a
     * PlusSpec): not placed yet. */
    Placed plus(Placed parent, String key, String relation, List<String> names) {
      return fresh(parent, "plus", "", key, relation, names);
    }

    /**
     * Python functions evaluated per row (BatchEvalPython for Python UDFs, ArrowEvalPython for
     * scalar pandas UDFs, which Spark's "Extract Python UDFs" takes out of projections and
     * filters): each output row is a fresh BLACK_BOX node labelled with the functions' names,
     * fed by its input row, as frame.py gives a projection that calls Python UDFs. The node's
     * child columns pass through it, the row's id among them.
     */
    private Placed pythonFunctions(BaseEvalPython node) {
      java.util.Set<String> names = new java.util.LinkedHashSet<>();
      Placed rows = evaluated(node, names);
      return fresh(rows, "black_box", String.join(",", names), run.nextKey("udf"), "",
          List.of());
    }

    /**
     * {@code node}'s rows, the child's columns passing through, with the evaluations right
     * below it (through projections) folded in: Spark splits one projection's functions over
     * several nodes (a grouping key's apart, ExtractGroupingPythonUDFFromAggregate), which
     * make one BLACK_BOX, as the projection does in the DataFrame API. {@code names} gets the
     * functions' names in the order they run.
     */
    private Placed evaluated(BaseEvalPython node, java.util.Set<String> names) {
      LogicalPlan below = node.child();
      Placed child;
      if (below instanceof BaseEvalPython inner) {
        child = evaluated(inner, names);
      } else if (below instanceof Project p && p.child() instanceof BaseEvalPython inner) {
        child = projection(p, evaluated(inner, names));
      } else {
        child = materialize(place(below));
      }
      for (org.apache.spark.sql.catalyst.expressions.PythonUDF udf
          : CollectionConverters.asJava(node.udfs())) {
        names.add(udf.name());
      }
      LogicalPlan evaluated = ((LogicalPlan) node).withNewChildren(seq(List.of(child.plan())));
      return new Placed(evaluated, attributes(node.output()), child.id(), null, child.origin(),
          child.idKeys());
    }

    /** {@code parent}'s rows as fresh nodes of tap kind {@code kind}, labelled {@code label},
     * each fed by its row: not placed yet. */
    private Placed fresh(Placed parent, String kind, String label, String key, String relation,
        List<String> names) {
      Alias id = alias(nodeId(key, parent.id()), "id");
      LogicalPlan p = project(parent.plan(), parent.plan().output(), id);
      List<String> origins = parent.origin().isEmpty() ? List.of() : List.of(parent.origin());
      TapPlan tap = tapPlan(kind, key, relation, names, List.of("id", "parent"),
          List.of("id", "id"), split(relation), "", List.of(), origins, false).labelled(label);
      List<Attribute> kept = relation.isEmpty() ? List.of() : parent.visible();
      return new Placed(p, parent.visible(), id.toAttribute(),
          new Pending(tap, List.of(id.toAttribute(), parent.id()), kept), "", Set.of(key));
    }

    TapPlan tapPlan(String kind, String key, String relation, List<String> attributes,
        List<String> inputs, List<String> types, String[] split, String groupKey,
        List<String> functions, List<String> origins, boolean valuesRead) {
      return tapPlan(kind, key, relation, attributes, inputs, types, split, groupKey, functions,
          List.of(), 0, origins, valuesRead);
    }

    TapPlan tapPlan(String kind, String key, String relation, List<String> attributes,
        List<String> inputs, List<String> types, String[] split, String groupKey,
        List<String> functions, List<Long> salts, int aggregates, List<String> origins,
        boolean valuesRead) {
      return tapPlan(kind, key, relation, attributes, inputs, types, split, groupKey, functions,
          salts, aggregates, origins, "", valuesRead);
    }

    TapPlan tapPlan(String kind, String key, String relation, List<String> attributes,
        List<String> inputs, List<String> types, String[] split, String groupKey,
        List<String> functions, List<Long> salts, int aggregates, List<String> origins,
        String pairKey, boolean valuesRead) {
      return tapPlan(kind, key, relation, attributes, inputs, types, split, groupKey, functions,
          salts, aggregates, origins, pairKey, valuesRead, List.of());
    }

    TapPlan tapPlan(String kind, String key, String relation, List<String> attributes,
        List<String> inputs, List<String> types, String[] split, String groupKey,
        List<String> functions, List<Long> salts, int aggregates, List<String> origins,
        String pairKey, boolean valuesRead, List<Integer> valueOf) {
      return new TapPlan(kind, key, run.runId(), run.workflow(), relation, attributes, inputs,
          types, List.of(split), "", 0L, functions, groupKey,
          kind.equals("member") || kind.equals("join_member"), aggregates,
          salts, origins, pairKey, run.rowsPerMessage(), CaptureRun.MAX_TEXT_BYTES, valuesRead,
          valueOf);
    }

    CaptureRun run() {
      return run;
    }

    /** The capture point of {@code plan}: one per plan in the query ({@link #taps}). */
    Tap tap(TapPlan plan) {
      return taps.computeIfAbsent(plan, p -> new Tap(p, run.sink(), run.counts()));
    }

    /** An in-memory leaf placed as a source: its key and relation name. */
    private record InMemorySource(LogicalPlan leaf, String key, String relation) {}

    /**
     * The in-memory source placed before in this query that gives the same rows in the same
     * order as {@code leaf} (a local relation, a range, or an RDD Spark marks DETERMINATE,
     * which its own task retries rely on): its rows are numbered the same, so the two reads are
     * one source, as two reads of the same files are. Null when none.
     */
    private InMemorySource sameSource(LogicalPlan leaf) {
      if (!repeatable(leaf)) {
        return null;
      }
      for (InMemorySource placed : sources) {
        if (placed.leaf().sameResult(leaf)) {
          return placed;
        }
      }
      return null;
    }

    private static boolean repeatable(LogicalPlan leaf) {
      if (leaf instanceof org.apache.spark.sql.catalyst.plans.logical.LocalRelation local) {
        return !local.isStreaming();
      }
      if (leaf instanceof org.apache.spark.sql.catalyst.plans.logical.Range) {
        return true;
      }
      return leaf instanceof org.apache.spark.sql.execution.LogicalRDD rdd && !rdd.isStreaming()
          && rdd.rdd().outputDeterministicLevel()
              == org.apache.spark.rdd.DeterministicLevel$.MODULE$.DETERMINATE();
    }

    /** The split path of nodes built outside modules: context.py's split_for. */
    static String[] split(String relation) {
      return relation.isEmpty() ? new String[] {MAIN_SPLIT} : new String[] {MAIN_SPLIT, relation};
    }

    /** A valid relation name for {@code leaf}, numbered when one is read twice (plan_capture.py's
     * _relation). */
    private String relationName(LogicalPlan leaf) {
      String name = leaf instanceof OneRowRelation ? ONE_ROW : SourceNames.of(leaf);
      if (name == null) {
        name = "relation";
      }
      StringBuilder clean = new StringBuilder();
      for (char c : name.toCharArray()) {
        clean.append(Character.isLetterOrDigit(c) || c == '_' ? c : '_');
      }
      String base = clean.length() == 0 ? "relation" : clean.toString();
      int seen = relations.merge(base, 1, Integer::sum);
      return seen == 1 ? base : base + "_" + seen;
    }

    /** A node id: xxhash64 of the run, the capture key and {@code columns} (NodeIds). */
    Expression nodeId(String key, Expression... columns) {
      long seed = NodeIds.seed(run.runId(), key);
      if (columns.length == 0) {
        return new RunConstant(seed);
      }
      return new RunSeededHash(List.of(columns), seed);
    }

    /** The hash inputs of grouping keys: each key and whether it is null (grouping.py). */
    static List<Expression> keyInputs(List<Expression> keys) {
      List<Expression> out = new ArrayList<>();
      for (Expression k : keys) {
        out.add(k);
        out.add(new IsNull(k));
      }
      return out;
    }
  }

  // -- Catalyst plumbing --------------------------------------------------------------------

  static Alias alias(Expression child, String name) {
    return new Alias(child, HIDDEN + name, org.apache.spark.sql.catalyst.expressions
        .NamedExpression$.MODULE$.newExprId(), seq(List.of()), scala.Option.empty(),
        seq(List.of()));
  }

  /** {@code child} projected to {@code output} and {@code more}. */
  static LogicalPlan project(LogicalPlan child, scala.collection.Seq<Attribute> output,
      NamedExpression... more) {
    List<NamedExpression> list = new ArrayList<>(CollectionConverters.asJava(output));
    list.addAll(List.of(more));
    return new Project(seq(list), child);
  }

  /** {@code a} as {@code plan}'s output holds it (an outer join makes a side nullable). */
  static Attribute inOutput(LogicalPlan plan, Attribute a) {
    for (Attribute o : CollectionConverters.asJava(plan.output())) {
      if (o.exprId().equals(a.exprId())) {
        return o;
      }
    }
    throw new IllegalStateException("no " + a + " in " + plan.nodeName() + "'s output");
  }

  static List<Attribute> attributes(scala.collection.Seq<Attribute> output) {
    return new ArrayList<>(CollectionConverters.asJava(output));
  }

  /** Attribute names as a tap's attribute names: unique (plan_capture.py's _child). */
  static List<String> uniqueNames(List<Attribute> attributes) {
    Map<String, Integer> taken = new HashMap<>();
    List<String> out = new ArrayList<>();
    for (Attribute a : attributes) {
      int n = taken.merge(a.name(), 1, Integer::sum);
      out.add(n == 1 ? a.name() : a.name() + "_sparkprov" + n);
    }
    return out;
  }

  static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
    return CollectionConverters.asScala(list).toList();
  }

  static boolean isAggregate(Expression e) {
    for (Expression sub : PlanFacts.subtree(e)) {
      if (sub instanceof AggregateExpression) {
        return true;
      }
    }
    return false;
  }
}
