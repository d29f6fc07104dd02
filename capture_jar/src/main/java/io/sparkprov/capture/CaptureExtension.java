package io.sparkprov.capture;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.ColumnarRule;
import scala.Function1;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * Capture from the query plan, for any job: a session started with
 * {@code spark.sql.extensions=io.sparkprov.capture.CaptureExtension} (and this jar on the
 * driver's and executors' classpath) captures every query's lineage from its optimized plan,
 * whether it came from SQL text or DataFrame calls, in Python, Scala or Java, without a line of
 * the job changed (docs/capture.md, "Capture through spark.sql.extensions";
 * docs/design/plan-extension.md).
 *
 * <p>Spark offers no hook into the optimizer's last batch ("User Provided Optimizers", after
 * subqueries became joins, where capture's own rules run), so the extension installs there
 * itself, from the builder of a check rule: Spark builds check rules with the session's
 * analyzer, before the session optimizes its first plan. The check rule itself remembers the
 * view or table names the analyzed plans read ({@link SourceNames}).
 */
public final class CaptureExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectCheckRule(new AbstractFunction1<
        SparkSession, Function1<LogicalPlan, BoxedUnit>>() {
      @Override
      public Function1<LogicalPlan, BoxedUnit> apply(SparkSession session) {
        install((org.apache.spark.sql.classic.SparkSession) session);
        return SourceNames.CHECK_RULE;
      }
    });
    // Before the stages' code is generated, with adaptive execution or without.
    extensions.injectColumnar(new AbstractFunction1<SparkSession, ColumnarRule>() {
      @Override
      public ColumnarRule apply(SparkSession session) {
        return MetadataColumns.COLUMNAR;
      }
    });
    return BoxedUnit.UNIT;
  }

  /** Capture's rules, in the order they must run: the placement first, then the rules that act
   * on the capture points it placed (as {@link Taps#installRules} installs them for Python). */
  static void install(org.apache.spark.sql.classic.SparkSession session) {
    roomForCapturedCode(session.sessionState().conf());
    var experimental = session.experimental();
    ExtraOptimizations.add(experimental, TapPlacement.INSTANCE);
    ExtraOptimizations.addStrategy(experimental, SizedAsSemiJoin.Planned.INSTANCE);
    ValuesPruning.install(experimental);
    SourceFiltersFirst.install(experimental);
    SourceRowsOnce.install(experimental);
    SourceJoinsFirst.install(experimental);
    FewerLayers.install(experimental);
  }

  /** Spark's cache of compiled generated classes: its size (a static conf, read once per JVM). */
  static final String CODEGEN_CACHE = "spark.sql.codegen.cache.maxEntries";
  /** Its size under capture, where the job leaves it unset (Spark's default is 100). */
  static final int CODEGEN_CACHE_ENTRIES = 1000;

  /**
   * Room for the capture's generated code: Spark keeps the last 100 compiled classes by
   * default, and a job that runs a loop of queries reuses its classes only while they fit. The
   * capture's taps make more and larger classes, and cars' loop went from fitting to evicting
   * each class before its next use (37-56 compilations per iteration, against 0-6 with room for
   * them): each query then compiles its code again (bench/README.md). Set where the job has not
   * set it, before the first query compiles anything.
   */
  static void roomForCapturedCode(org.apache.spark.sql.internal.SQLConf conf) {
    if (!conf.contains(CODEGEN_CACHE)) {
      conf.setConfString(CODEGEN_CACHE, Integer.toString(CODEGEN_CACHE_ENTRIES));
    }
  }
}
