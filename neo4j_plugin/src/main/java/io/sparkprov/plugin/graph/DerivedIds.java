package io.sparkprov.plugin.graph;

import io.sparkprov.shared.Salts;

/**
 * Derived node ids, as sparkprov/derived.py computes them: {@code derive} is splitmix64 of a
 * parent id and a salt, {@code underive} its inverse for one salt, and {@link #salt} is {@code
 * salt_of(*parts)}: BLAKE2b-64 of the parts' encoding ({@link Salts#encode}), read big-endian. The
 * rule is written once, in sparkprov/derived.py's docstring; src/test/resources/derived-ids.json
 * holds the vectors both languages check.
 * The traversal procedures need them to expand member edges into the TENSOR and VALUE nodes the
 * capture agent named, and to find a derived id's member edge by its pair.
 */
public final class DerivedIds {
  private static final long GOLDEN = 0x9E3779B97F4A7C15L;
  private static final long M1 = 0xBF58476D1CE4E5B9L;
  private static final long M2 = 0x94D049BB133111EBL;
  private static final long M1_INV = inverse(M1);
  private static final long M2_INV = inverse(M2);

  private DerivedIds() {}

  public static long derive(long id, long salt) {
    long z = id + salt * GOLDEN;
    z = (z ^ (z >>> 30)) * M1;
    z = (z ^ (z >>> 27)) * M2;
    return z ^ (z >>> 31);
  }

  public static long underive(long id, long salt) {
    long z = id;
    z = z ^ (z >>> 31) ^ (z >>> 62);
    z = z * M2_INV;
    z = z ^ (z >>> 27) ^ (z >>> 54);
    z = z * M1_INV;
    z = z ^ (z >>> 30) ^ (z >>> 60);
    return z - salt * GOLDEN;
  }

  /**
   * {@code salt_of(*parts)} for parts that are strings and integers: BLAKE2b-64, read big-endian,
   * of the parts' encoding ({@link Salts#encode}).
   */
  public static long salt(Object... parts) {
    return Salts.salt(parts);
  }

  /** The multiplicative inverse of an odd number modulo 2^64 (Newton's iteration). */
  private static long inverse(long a) {
    long x = a;
    for (int i = 0; i < 6; i++) {
      x *= 2 - a * x;
    }
    return x;
  }
}
