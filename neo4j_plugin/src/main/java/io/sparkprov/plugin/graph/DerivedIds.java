package io.sparkprov.plugin.graph;

import java.nio.charset.StandardCharsets;

/**
 * Derived node ids, as sparkprov/derived.py computes them: {@code derive} is splitmix64 of a
 * parent id and a salt, {@code underive} its inverse for one salt, and {@link #salt} is {@code
 * salt_of(*parts)}: BLAKE2b-64 of Python's {@code repr} of the parts' tuple, read big-endian.
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

  /** {@code salt_of(*parts)} for parts that are strings and integers. */
  public static long salt(Object... parts) {
    byte[] digest = Blake2b.digest8(pythonRepr(parts).getBytes(StandardCharsets.UTF_8));
    long out = 0;
    for (byte b : digest) {
      out = (out << 8) | (b & 0xFF);
    }
    return out;
  }

  /** Python's repr of a tuple of str and int. */
  static String pythonRepr(Object... parts) {
    StringBuilder out = new StringBuilder("(");
    for (int i = 0; i < parts.length; i++) {
      if (i > 0) {
        out.append(", ");
      }
      Object part = parts[i];
      if (part instanceof String s) {
        reprString(s, out);
      } else if (part instanceof Integer || part instanceof Long) {
        out.append(part);
      } else {
        throw new IllegalArgumentException("no Python repr for " + part);
      }
    }
    return out.append(parts.length == 1 ? ",)" : ")").toString();
  }

  /** Python's str.__repr__: single quotes unless the text has one and no double quote. */
  private static void reprString(String s, StringBuilder out) {
    char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
    out.append(quote);
    s.codePoints()
        .forEach(
            c -> {
              if (c == quote || c == '\\') {
                out.append('\\').appendCodePoint(c);
              } else if (c == '\t') {
                out.append("\\t");
              } else if (c == '\n') {
                out.append("\\n");
              } else if (c == '\r') {
                out.append("\\r");
              } else if (c < 0x20 || c == 0x7F) {
                out.append(String.format("\\x%02x", c));
              } else if (c < 0x7F || printable(c)) {
                out.appendCodePoint(c);
              } else if (c < 0x100) {
                out.append(String.format("\\x%02x", c));
              } else if (c < 0x10000) {
                out.append(String.format("\\u%04x", c));
              } else {
                out.append(String.format("\\U%08x", c));
              }
            });
    out.append(quote);
  }

  /** Python's str.isprintable for one non-ASCII code point (categories C*, Z* but space). */
  private static boolean printable(int c) {
    return switch (Character.getType(c)) {
      case Character.CONTROL,
          Character.FORMAT,
          Character.SURROGATE,
          Character.PRIVATE_USE,
          Character.UNASSIGNED,
          Character.LINE_SEPARATOR,
          Character.PARAGRAPH_SEPARATOR,
          Character.SPACE_SEPARATOR -> false;
      default -> true;
    };
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
