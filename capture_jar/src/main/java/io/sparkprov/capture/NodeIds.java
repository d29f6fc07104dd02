package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Node ids as Spark expressions, equal to {@code xxhash64(lit(run), lit(key), cols...)} (the
 * capture agent's ids: capture_agent/context.py) but cheaper: Spark's xxhash64 folds its
 * arguments left to right, each hash seeding the next, so the two constant strings are hashed
 * once here, into the value {@code s} the fold reaches after them, and not again for every row.
 *
 * <p>{@code s} differs per run, and a seed is inlined into the generated code as a literal (so
 * would a literal argument be): every run would compile classes of its own. So {@code s} enters
 * as the first argument instead, a {@link RunConstant} read from the stage's references, after
 * Spark's own seed: {@code xxhash64(preimage, cols...)}, where {@code preimage} is the long whose
 * hash with seed 42 is {@code s} ({@link #unhashLong}: XXH64's hash of one long is a bijection).
 * The values are the same; the code is the same in every run. {@link RunSeededHash} generates
 * that code with {@code s} read as the seed itself, one XXH64 round less per row.
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
    long seed = seed(run, key);
    if (columns.length == 0) { // xxhash64(lit(run), lit(key)): constant for the run
      return ExpressionUtils.column(new RunConstant(seed));
    }
    List<Expression> children = new ArrayList<>(columns.length);
    for (Column c : columns) {
      children.add(ExpressionUtils.expression(c));
    }
    return ExpressionUtils.column(new RunSeededHash(children, seed));
  }

  // XXH64's 64-bit primes (org.apache.spark.sql.catalyst.expressions.XXH64).
  private static final long PRIME64_1 = 0x9E3779B185EBCA87L;
  private static final long PRIME64_2 = 0xC2B2AE3D27D4EB4FL;
  private static final long PRIME64_3 = 0x165667B19E3779F9L;
  private static final long PRIME64_4 = 0x85EBCA77C2B2AE63L;
  private static final long PRIME64_5 = 0x27D4EB2F165667C5L;
  private static final long INVERSE_1 = inverse(PRIME64_1);
  private static final long INVERSE_2 = inverse(PRIME64_2);
  private static final long INVERSE_3 = inverse(PRIME64_3);

  /**
   * The long {@code x} with {@code XXH64.hashLong(x, seed) == hash}: each step of that hash
   * (multiplications by odd primes, rotations, xor-shifts, a xor with a function of the seed) is
   * a bijection on longs, undone here in reverse order.
   */
  static long unhashLong(long hash, long seed) {
    long h = hash;
    h ^= h >>> 32;
    h *= INVERSE_3;
    h ^= (h >>> 29) ^ (h >>> 58);
    h *= INVERSE_2;
    h ^= h >>> 33;
    long mixed = Long.rotateRight((h - PRIME64_4) * INVERSE_1, 27);
    long k1 = mixed ^ (seed + PRIME64_5 + 8L);
    return Long.rotateRight(k1 * INVERSE_1, 31) * INVERSE_2;
  }

  /** The inverse of an odd long modulo 2^64 (Newton's iteration: each step doubles the bits). */
  static long inverse(long odd) {
    long x = odd; // correct to 3 bits: odd * odd == 1 (mod 8)
    for (int i = 0; i < 5; i++) {
      x *= 2 - odd * x;
    }
    return x;
  }
}
