package io.sparkprov.capture;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.Block;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode$;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import scala.Option;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A capture point as a Catalyst expression: always true, non-deterministic, over the tap's
 * inputs (its children, in the TapPlan's order). A tap may instead yield one of its id inputs
 * ({@link #yielding}): the row's own id, so that one projection both computes the id and
 * captures the row, with no filter and no second projection around it ({@link FewerLayers}).
 * Whole-stage codegen inlines it: the generated code evaluates each input and writes it into the tap's row slots (a number as a long, a text
 * or an id array as Spark's own object), then hands the row to the {@link Tap}: no struct, no
 * boxing, no conversion to external types. A kept value of a numeric column is handed over as
 * the number, never cast to text (ingest writes the text: sparkprov/values.py); one of another
 * type (a date, a decimal) is cast to text here, as Spark's cast to string does. Spark
 * serializes the Tap with the stage's references, so each task has its own copy and state.
 */
public final class TapExpression extends Expression implements Serializable {
  private static final long serialVersionUID = 2L;

  private final List<Expression> inputs;
  private final Tap tap;
  // A tap over runs (Tap.Runs): the pair's run, a long; null otherwise. The last child.
  private final Expression run;
  // The id input this tap yields (a projection's column), or -1: a filter's condition, true.
  private final int yields;
  // The interpreted path's tap, slots and input expressions, made on its first row.
  private transient Tap typed;
  private transient Chunk.Slot[] typedSlots;
  private transient Expression[] typedValues;

  public TapExpression(List<Expression> inputs, Tap tap) {
    this(inputs, tap, null);
  }

  /**
   * A capture point over a join's pairs grouped by left row ({@link Tap#over}): true for the
   * pairs it keeps, {@code run} each pair's left row number.
   */
  public TapExpression(List<Expression> inputs, Tap tap, Expression run) {
    this(inputs, tap, run, -1);
  }

  private TapExpression(List<Expression> inputs, Tap tap, Expression run, int yields) {
    if ((run == null) != (tap.runs() == null)) {
      throw new IllegalArgumentException("tap " + tap.plan().key()
          + ": a run is given exactly when the tap takes its rows in runs");
    }
    this.inputs = List.copyOf(inputs);
    this.tap = tap;
    this.run = run;
    if (yields >= 0 && (run != null || yields >= tap.plan().inputs().size()
        || !tap.plan().inputTypes().get(yields).equals("id"))) {
      throw new IllegalArgumentException("tap " + tap.plan().key()
          + ": only a tap that takes every row yields, and only one of its id inputs");
    }
    this.yields = yields;
  }

  /** This tap yielding its id input {@code i} (a long) instead of true: a projection's column. */
  TapExpression yielding(int i) {
    return new TapExpression(inputs, tap, run, i);
  }

  /** Whether this tap yields an id ({@link #yielding}). */
  boolean yieldsId() {
    return yields >= 0;
  }

  /** This tap as a filter's condition again: true for every row, its id input unyielded. */
  TapExpression asCondition() {
    return yields < 0 ? this : new TapExpression(inputs, tap, run, -1);
  }

  /** Whether this tap keeps only the attributes the query reads ({@link ValuesPruning}). */
  boolean keepsReadValues() {
    return tap.plan().valuesRead() && !tap.plan().attributes().isEmpty() && !aboveJoin();
  }

  /** This source tap over {@code newInputs}, the same inputs as a join's output gives them,
   * above that join ({@link SourceJoinsFirst}). Its values were pruned before it moved: the
   * columns it keeps are now read by it, not pruned again. */
  TapExpression aboveJoin(List<Expression> newInputs) {
    if (run != null || yields >= 0 || newInputs.size() != inputs.size()) {
      throw new IllegalArgumentException("tap " + tap.plan().key()
          + ": only a filter's tap moves above a join, with as many inputs");
    }
    return new TapExpression(newInputs, tap.aboveJoin(), null, -1);
  }

  /** What the tap emits. */
  TapPlan plan() {
    return tap.plan();
  }

  /** Whether this tap sits above a join that its source's rows meet first. */
  boolean aboveJoin() {
    return tap.sitsAboveJoin();
  }

  /** Whether this is a source's capture point (a TOKEN per row it sees). */
  boolean isSource() {
    return Emission.Kind.of(tap.plan().kind()) == Emission.Kind.SOURCE;
  }

  /** Whether its rows' positions name their files ({@link SourcePosition}), not Spark's
   * partitions: a row's id then says which file row it is, stored or not. */
  boolean positionsByFile() {
    return contains(inputs.get(tap.plan().input("rowno")), SourcePosition.class);
  }

  /** Whether {@code e} or an expression under it is a {@code kind}. */
  static boolean contains(Expression e, Class<?> kind) {
    if (kind.isInstance(e)) {
      return true;
    }
    for (Expression child : CollectionConverters.asJava(e.children())) {
      if (contains(child, kind)) {
        return true;
      }
    }
    return false;
  }

  /** This tap not sending the rows its run sent before ({@link Tap#skippingRowsSentBefore}). */
  TapExpression skippingRowsSentBefore() {
    return new TapExpression(inputs, tap.skippingRowsSentBefore(), run, yields);
  }

  /** Whether {@link #skippingRowsSentBefore} was applied. */
  boolean skipsRowsSentBefore() {
    return tap.skipsRowsSentBefore();
  }

  /** The tap's id inputs (its hidden columns), without the attribute values after them. */
  List<Expression> idInputs() {
    return inputs.subList(0, tap.plan().inputs().size());
  }

  /** Attribute {@code i}'s value expression. */
  Expression attributeValue(int i) {
    return inputs.get(tap.plan().attribute(i));
  }

  int attributeCount() {
    return tap.plan().attributes().size();
  }

  /** This tap keeping only the attributes whose {@code keep} flag is set: this one if all are. */
  TapExpression keeping(boolean[] keep) {
    List<String> names = new ArrayList<>();
    List<Expression> kept = new ArrayList<>(idInputs());
    for (int i = 0; i < keep.length; i++) {
      if (keep[i]) {
        names.add(tap.plan().attributes().get(i));
        kept.add(attributeValue(i));
      }
    }
    return kept.size() == inputs.size() ? this
        : new TapExpression(kept, tap.keeping(names), run, yields);
  }

  @Override
  public Seq<Expression> children() {
    if (run == null) {
      return scalaSeq(inputs);
    }
    List<Expression> all = new ArrayList<>(inputs);
    all.add(run);
    return scalaSeq(all);
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> children) {
    List<Expression> all = CollectionConverters.asJava(children);
    if (run == null) {
      return new TapExpression(all, tap, null, yields);
    }
    return new TapExpression(all.subList(0, all.size() - 1), tap, all.get(all.size() - 1),
        yields);
  }

  /** Whether input {@code i} is a pair's right row id that the tap gathers into its row's id
   * array (a semi or existence join's runs: {@link Tap.Runs}): one id, written as a long. */
  private boolean gathered(int i) {
    return tap.runs() != null && tap.runs() != Tap.Runs.ANTI && i == tap.pairInput();
  }

  @Override
  public boolean nullable() {
    return false;
  }

  @Override
  public DataType dataType() {
    return yields >= 0 ? DataTypes.LongType : DataTypes.BooleanType;
  }

  @Override
  public boolean deterministic() {
    return false;
  }

  @Override
  public String prettyName() {
    return "sparkprov_tap_" + tap.plan().key();
  }

  /**
   * How Spark holds input {@code i} (resolved): the slot it takes in the tap's rows. Ids, id
   * arrays and flags must be what their TapPlan type says; a value ("text") is taken as a number
   * if it is one (a boolean as a flag), as a string if it is one, else cast to text ({@link
   * #value}): an array or a struct a relation keeps is a value, never an id array.
   */
  private Chunk.Slot slot(int i) {
    DataType type = inputs.get(i).dataType();
    String declared = i < tap.plan().inputs().size() ? tap.plan().inputTypes().get(i) : "text";
    boolean integral = type instanceof LongType || type instanceof IntegerType
        || type instanceof ShortType || type instanceof ByteType;
    if (gathered(i)) {
      return type instanceof LongType ? Chunk.Slot.ARRAY : fail(i, declared, type);
    }
    Chunk.Slot slot = switch (declared) {
      case "id" -> integral ? Chunk.Slot.LONG : null;
      case "ids" -> type instanceof ArrayType array && array.elementType() instanceof LongType
          ? Chunk.Slot.ARRAY : null;
      case "flag" -> type instanceof BooleanType ? Chunk.Slot.BOOL : null;
      default -> integral ? Chunk.Slot.LONG
          : type instanceof DoubleType ? Chunk.Slot.DOUBLE
          : type instanceof BooleanType ? Chunk.Slot.BOOL
          : type instanceof DateType ? Chunk.Slot.DATE
          : unscaled(type) ? Chunk.Slot.DECIMAL
          : wide(type) ? Chunk.Slot.WIDE_DECIMAL
          : Chunk.Slot.TEXT; // a string, or cast to one
    };
    return slot != null ? slot : fail(i, declared, type);
  }

  private Chunk.Slot fail(int i, String declared, DataType type) {
    throw new IllegalStateException("tap " + tap.plan().key() + ": input "
        + (i < tap.plan().inputs().size() ? tap.plan().inputs().get(i) : "attribute " + i)
        + " is declared " + declared + (gathered(i) ? " (one id per pair)" : "")
        + " but Spark holds it as " + type.simpleString());
  }

  /**
   * Whether a decimal of {@code type} travels as its unscaled long: up to 18 digits, and only
   * where Spark's cast writes decimals plainly (ANSI mode), which is the text the reader writes.
   */
  private static boolean unscaled(DataType type) {
    return type instanceof DecimalType d && d.precision() <= Decimal.MAX_LONG_DIGITS()
        && SQLConf.get().ansiEnabled();
  }

  /** Whether a decimal of {@code type} may have more than 18 digits (its scale at most 18),
   * where Spark's cast writes decimals plainly (ANSI mode): a value of up to 18 digits travels
   * as its unscaled long, a longer one as its text ({@link Chunk.Slot#WIDE_DECIMAL}), neither
   * cast by Spark. */
  private static boolean wide(DataType type) {
    return type instanceof DecimalType d && d.precision() > Decimal.MAX_LONG_DIGITS()
        && d.scale() <= Decimal.MAX_LONG_DIGITS() && SQLConf.get().ansiEnabled();
  }

  private int[] scales(Chunk.Slot[] slots) {
    int[] scales = new int[slots.length];
    for (int i = 0; i < slots.length; i++) {
      if (slots[i] == Chunk.Slot.DECIMAL || slots[i] == Chunk.Slot.WIDE_DECIMAL) {
        scales[i] = ((DecimalType) inputs.get(i).dataType()).scale();
      }
    }
    return scales;
  }

  private Chunk.Slot[] slots() {
    Chunk.Slot[] slots = new Chunk.Slot[inputs.size()];
    for (int i = 0; i < slots.length; i++) {
      slots[i] = slot(i);
    }
    return slots;
  }

  /** Input {@code i} as the tap reads it: itself, or cast to text if it is no number or text. */
  private Expression value(int i, Chunk.Slot slot) {
    Expression input = inputs.get(i);
    if (slot == Chunk.Slot.TEXT && !(input.dataType() instanceof StringType)) {
      return new Cast(input, DataTypes.StringType,
          Option.apply(SQLConf.get().sessionLocalTimeZone()));
    }
    return input;
  }

  @Override
  public Object eval(InternalRow input) {
    Tap t = typed;
    if (t == null) {
      typedSlots = slots();
      typedValues = new Expression[typedSlots.length];
      for (int i = 0; i < typedSlots.length; i++) {
        typedValues[i] = value(i, typedSlots[i]);
      }
      t = tap.typed(typedSlots, scales(typedSlots));
      typed = t;
    }
    Chunk.Slot[] slots = typedSlots;
    Object[] row = (Object[]) t.get();
    long[] longs = (long[]) row[0];
    boolean[] nulls = (boolean[]) row[1];
    Object[] refs = (Object[]) row[2];
    int at = ((int[]) row[3])[0];
    Object yielded = null;
    for (int i = 0; i < slots.length; i++) {
      Object v = typedValues[i].eval(input);
      if (i == yields) {
        yielded = v;
      }
      nulls[at + i] = v == null;
      if (v == null) {
        continue;
      }
      if (gathered(i)) {
        longs[at + i] = ((Number) v).longValue();
        continue;
      }
      switch (slots[i]) {
        case LONG, DATE -> longs[at + i] = ((Number) v).longValue();
        case DECIMAL -> longs[at + i] = ((Decimal) v).toUnscaledLong();
        case DOUBLE -> longs[at + i] = Double.doubleToRawLongBits((Double) v);
        case BOOL -> longs[at + i] = ((Boolean) v) ? 1L : 0L;
        case TEXT, ARRAY, WIDE_DECIMAL -> refs[i] = v;
        default -> throw new IllegalStateException();
      }
    }
    if (run != null) {
      ((long[]) row[4])[0] = ((Number) run.eval(input)).longValue();
      return t.test(row);
    }
    t.accept(row);
    return yields >= 0 ? ((Number) yielded).longValue() : Boolean.TRUE;
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    Chunk.Slot[] slots = slots();
    // Typed as JDK interfaces: Spark compiles the generated code with a class loader that need
    // not see this jar's classes (the driver loads them with a loader of their own).
    String ref = ctx.addReferenceObj("sparkprovTap", tap.typed(slots, scales(slots)),
        "java.util.function.Supplier");
    String row = ctx.freshName("sparkprovRow");
    String longs = ctx.freshName("sparkprovLongs");
    String nulls = ctx.freshName("sparkprovNulls");
    String refs = ctx.freshName("sparkprovRefs");
    String at = ctx.freshName("sparkprovAt");
    List<String> parts = new ArrayList<>();
    List<JavaCode> args = new ArrayList<>();
    ExprCode yielded = null;
    StringBuilder code = new StringBuilder()
        .append("Object[] ").append(row).append(" = (Object[]) ").append(ref).append(".get();\n")
        .append("long[] ").append(longs).append(" = (long[]) ").append(row).append("[0];\n")
        .append("boolean[] ").append(nulls).append(" = (boolean[]) ").append(row)
        .append("[1];\n")
        .append("Object[] ").append(refs).append(" = (Object[]) ").append(row).append("[2];\n")
        .append("int ").append(at).append(" = ((int[]) ").append(row).append("[3])[0];\n");
    Block block = new CodeBlock(scalaSeq(List.of(code.toString())), scalaSeq(List.of()));
    for (int i = 0; i < slots.length; i++) {
      ExprCode input = value(i, slots[i]).genCode(ctx);
      block = block.$plus(input.code());
      if (i == yields) {
        yielded = input;
      }
      String cell = "[" + at + " + " + i + "]";
      String store = gathered(i) ? longs + cell + " = (long) " : switch (slots[i]) {
        case LONG, DATE -> longs + cell + " = (long) ";
        case DECIMAL -> longs + cell + " = (";
        case DOUBLE -> longs + cell + " = java.lang.Double.doubleToRawLongBits(";
        case BOOL -> longs + cell + " = (";
        case TEXT, ARRAY, WIDE_DECIMAL -> refs + "[" + i + "] = ";
      };
      String end = gathered(i) ? ";\n" : switch (slots[i]) {
        case DOUBLE -> ");\n";
        case BOOL -> ") ? 1L : 0L;\n";
        case DECIMAL -> ").toUnscaledLong();\n";
        default -> ";\n";
      };
      parts.clear();
      args.clear();
      parts.add(nulls + cell + " = ");
      args.add(input.isNull());
      parts.add(";\nif (!" + nulls + cell + ") { " + store);
      args.add(input.value());
      parts.add(end + "}\n");
      block = block.$plus(new CodeBlock(scalaSeq(List.copyOf(parts)), scalaSeq(List.copyOf(args))));
    }
    if (run != null) {
      ExprCode number = run.genCode(ctx);
      block = block.$plus(number.code());
      String kept = ctx.freshName("sparkprovKept");
      block = block.$plus(new CodeBlock(scalaSeq(List.of(
          "((long[]) " + row + "[4])[0] = ", ";\nboolean " + kept
              + " = ((java.util.function.Predicate) " + ref + ").test(" + row + ");\n")),
          scalaSeq(List.of(number.value()))));
      return ExprCode.apply(block, FalseLiteral$.MODULE$,
          JavaCode$.MODULE$.variable(kept, DataTypes.BooleanType));
    }
    block = block.$plus(new CodeBlock(
        scalaSeq(List.of("((java.util.function.Consumer) " + ref + ").accept(" + row + ");\n")),
        scalaSeq(List.of())));
    if (yielded != null) { // an id is never null: a hash, or a position
      return ExprCode.apply(block, FalseLiteral$.MODULE$, yielded.value());
    }
    return ExprCode.apply(block, FalseLiteral$.MODULE$,
        JavaCode$.MODULE$.literal("true", DataTypes.BooleanType));
  }

  @Override
  public int productArity() {
    return 4;
  }

  @Override
  public Object productElement(int n) {
    return switch (n) {
      case 0 -> inputs;
      case 1 -> tap;
      case 2 -> run;
      case 3 -> yields;
      default -> throw new IndexOutOfBoundsException(n);
    };
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof TapExpression;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof TapExpression t && t.tap == tap && t.inputs.equals(inputs)
        && java.util.Objects.equals(t.run, run) && t.yields == yields;
  }

  @Override
  public int hashCode() {
    return ((System.identityHashCode(tap) * 31 + inputs.hashCode()) * 31
        + java.util.Objects.hashCode(run)) * 31 + yields;
  }

  private static <T> Seq<T> scalaSeq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }
}
