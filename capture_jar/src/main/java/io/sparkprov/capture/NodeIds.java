package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.catalyst.expressions.XxHash64;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.functions;
import org.apache.spark.unsafe.types.UTF8String;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Node ids as Spark expressions, equal to {@code xxhash64(lit(run), lit(key), cols...)} (the
 * capture agent's ids: capture_agent/context.py) but cheaper: Spark's xxhash64 folds its
 * arguments left to right, each hash seeding the next, so hashing the two constant strings once
 * here and seeding {@code xxhash64(cols...)} with the result gives the same value without
 * hashing them again for every row.
 */
final class NodeIds {
  /** Spark's xxhash64 seed (org.apache.spark.sql.functions.xxhash64). */
  static final long SPARK_SEED = 42L;

  private NodeIds() {}

  /** The hash of the constant prefix {@code texts}, as xxhash64 would have folded it. */
  static long seed(String... texts) {
    long hash = SPARK_SEED;
    for (String text : texts) {
      UTF8String s = UTF8String.fromString(text);
      hash = XXH64.hashUnsafeBytes(s.getBaseObject(), s.getBaseOffset(), s.numBytes(), hash);
    }
    return hash;
  }

  static Column column(String run, String key, Column[] columns) {
    if (columns.length == 0) { // xxhash64(lit(run), lit(key)): a constant
      return functions.lit(seed(run, key));
    }
    List<Expression> children = new ArrayList<>(columns.length);
    for (Column c : columns) {
      children.add(ExpressionUtils.expression(c));
    }
    return ExpressionUtils.column(
        new XxHash64(CollectionConverters.asScala(children).toList(), seed(run, key)));
  }
}
