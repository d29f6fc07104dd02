package io.sparkprov.capture;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.XxHash64;
import org.apache.spark.sql.catalyst.expressions.codegen.Block;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType$;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A node id: Spark's {@code xxhash64(cols...)} seeded with the run's seed {@code s} of the id's
 * key ({@link NodeIds#seed}), so the same values as {@code xxhash64(preimage, cols...)}, the form
 * {@link NodeIds} describes, with one XXH64 round less per row. Spark's xxhash64 writes its seed
 * into the generated code as a literal, which differs per run (each run would compile classes of
 * its own); here the generated code reads {@code s} from the stage's references, as {@link
 * RunConstant} does, so the code is the same in every run, and hashes each column as Spark's
 * xxhash64 does ({@link XxHash64#computeHash}). Interpreted, it is Spark's xxhash64 with seed
 * {@code s}. Over more than {@link #INLINED} columns it generates the preimage form's code, which
 * Spark splits into methods of their own as the columns grow.
 */
public final class RunSeededHash extends Expression implements Serializable {
  private static final long serialVersionUID = 1L;
  /** The columns whose hashes are written inline, one after the other. */
  static final int INLINED = 6;

  private final List<Expression> columns;
  private final long seed;
  private transient XxHash64 spark; // Spark's xxhash64 of the columns with seed s

  /** Public, with the product's elements as its parameters: Catalyst's TreeNode.makeCopy
   * copies a node through such a constructor. */
  public RunSeededHash(List<Expression> columns, long seed) {
    if (columns.isEmpty()) {
      throw new IllegalArgumentException("a seeded hash of no columns: use RunConstant");
    }
    this.columns = List.copyOf(columns);
    this.seed = seed;
  }

  long seed() {
    return seed;
  }

  private XxHash64 spark() {
    if (spark == null) {
      spark = new XxHash64(children(), seed);
    }
    return spark;
  }

  /** The same values as {@code xxhash64(preimage, cols...)} with Spark's seed. */
  XxHash64 preimageForm() {
    List<Expression> children = new java.util.ArrayList<>();
    children.add(new RunConstant(NodeIds.unhashLong(seed, NodeIds.SPARK_SEED)));
    children.addAll(columns);
    return new XxHash64(CollectionConverters.asScala(children).toList(), NodeIds.SPARK_SEED);
  }

  @Override
  public Seq<Expression> children() {
    return CollectionConverters.asScala(columns).toList();
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> children) {
    return new RunSeededHash(CollectionConverters.asJava(children), seed);
  }

  @Override
  public boolean nullable() {
    return false;
  }

  @Override
  public DataType dataType() {
    return LongType$.MODULE$;
  }

  @Override
  public String prettyName() {
    return "sparkprov_node_id";
  }

  @Override
  public Object eval(InternalRow input) {
    return spark().eval(input);
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    if (columns.size() > INLINED) {
      return preimageForm().genCode(ctx);
    }
    String hash = ev.value().toString();
    String seedRef = ctx.addReferenceObj("sparkprovRunSeed", seed, "java.lang.Long");
    Block block = code("long " + hash + " = " + seedRef + ".longValue();\n");
    for (Expression column : columns) {
      ExprCode value = column.genCode(ctx);
      block = block.$plus(value.code());
      String step = spark().computeHash(value.value().toString(), column.dataType(), hash, ctx);
      if (column.nullable()) {
        step = "if (!" + value.isNull() + ") {\n" + step + "\n}";
      }
      block = block.$plus(code(step + "\n"));
    }
    return ExprCode.apply(block, FalseLiteral$.MODULE$,
        JavaCode$.MODULE$.variable(hash, LongType$.MODULE$));
  }

  private static Block code(String text) {
    return new CodeBlock(CollectionConverters.asScala(List.of(text)).toList(),
        CollectionConverters.asScala(List.<JavaCode>of()).toList());
  }

  @Override
  public int productArity() {
    return 2;
  }

  @Override
  public Object productElement(int n) {
    return switch (n) {
      case 0 -> columns;
      case 1 -> seed;
      default -> throw new IndexOutOfBoundsException(n);
    };
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof RunSeededHash;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof RunSeededHash h && h.seed == seed && h.columns.equals(columns);
  }

  @Override
  public int hashCode() {
    return columns.hashCode() * 31 + Long.hashCode(seed);
  }
}
