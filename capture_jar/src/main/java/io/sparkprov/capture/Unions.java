package io.sparkprov.capture;

import io.sparkprov.capture.TapPlacement.Placed;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A Union's placement (frame.py's {@code union}, folded over the children as plan_capture.py's
 * {@code _Union} does): a bag union, so every row keeps its node; the children's ids travel as
 * one more column, last, which the Union's output takes from its first child. Where a child's
 * ids may hold a node an earlier child's hold too (their capture keys meet: frame.py's
 * {@code _apart_from}), that child's rows get a fresh PLUS node each, so a row on both sides is
 * two rows of the graph as it is two rows of the result (an aggregate above takes it twice).
 */
final class Unions {
  private Unions() {}

  static Placed place(TapPlacement.Placement at, Union node) {
    List<LogicalPlan> children = new ArrayList<>();
    Set<String> keys = new HashSet<>();
    for (LogicalPlan child : CollectionConverters.asJava(node.children())) {
      Placed side = at.materialize(at.place(child));
      if (!children.isEmpty()) {
        side = apartFrom(at, side, keys);
      }
      keys.addAll(side.idKeys());
      children.add(visibleThenId(side));
    }
    LogicalPlan union = node.withNewChildren(TapPlacement.seq(children));
    List<Attribute> output = TapPlacement.attributes(union.output());
    // The sides' ids are no one source's rows: a join above sends them as ids, not positions.
    return new Placed(union, TapPlacement.attributes(node.output()),
        output.get(output.size() - 1), null, "", keys);
  }

  /** {@code side} as it is, or, where its ids may hold a node of {@code earlier} keys, its rows
   * as fresh PLUS nodes (placed). */
  private static Placed apartFrom(TapPlacement.Placement at, Placed side, Set<String> earlier) {
    if (java.util.Collections.disjoint(side.idKeys(), earlier)) {
      return side;
    }
    return at.materialize(at.plus(side, at.run().nextKey("union"), "", List.of()));
  }

  /** A side's plan with exactly its visible columns, then its id: the columns the union lines
   * up by position. */
  private static LogicalPlan visibleThenId(Placed side) {
    List<NamedExpression> columns = new ArrayList<>(side.visible());
    columns.add(side.id());
    return new Project(TapPlacement.seq(columns), side.plan());
  }
}
