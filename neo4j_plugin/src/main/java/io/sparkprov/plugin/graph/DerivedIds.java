package io.sparkprov.plugin.graph;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;

/**
 * Derived node ids, as sparkprov/derived.py computes them: {@code derive} is splitmix64 of a
 * parent id and a salt, {@code underive} its inverse for one salt, and {@link #salt} is {@code
 * salt_of(*parts)}: BLAKE2b-64 of the parts' encoding ({@link #encode}), read big-endian. The
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
   * of the parts' encoding ({@link #encode}).
   */
  public static long salt(Object... parts) {
    byte[] digest = Blake2b.digest8(encode(parts));
    long out = 0;
    for (byte b : digest) {
      out = (out << 8) | (b & 0xFF);
    }
    return out;
  }

  /**
   * The parts as sparkprov/derived.py encodes them for their salt: per part, in order and with no
   * separator, a tag ({@code s} for a string, {@code i} for an integer), the payload's length in
   * UTF-8 bytes in decimal, {@code ':'} and the payload (the string's UTF-8 bytes, or the
   * integer's decimal text). Each part says where it ends, so nothing needs escaping.
   */
  static byte[] encode(Object... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Object part : parts) {
      char tag;
      byte[] payload;
      if (part instanceof String s) {
        tag = 's';
        payload = utf8(s);
      } else if (part instanceof Integer || part instanceof Long) {
        tag = 'i';
        payload = part.toString().getBytes(StandardCharsets.US_ASCII);
      } else {
        throw new IllegalArgumentException("a salt part is a String or an integer, not " + part);
      }
      out.write(tag);
      out.writeBytes(Integer.toString(payload.length).getBytes(StandardCharsets.US_ASCII));
      out.write(':');
      out.writeBytes(payload);
    }
    return out.toByteArray();
  }

  /** Strict UTF-8: a lone surrogate fails, as Python's {@code str.encode} does. */
  private static byte[] utf8(String s) {
    try {
      ByteBuffer bytes = StandardCharsets.UTF_8.newEncoder().encode(CharBuffer.wrap(s));
      byte[] out = new byte[bytes.remaining()];
      bytes.get(out);
      return out;
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("a salt part is not valid Unicode: " + e.getMessage(), e);
    }
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
