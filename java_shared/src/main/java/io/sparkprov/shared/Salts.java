package io.sparkprov.shared;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;

/**
 * The salts of derived node ids, {@code salt_of(*parts)} of sparkprov/derived.py (whose docstring
 * states the rule): BLAKE2b-64, read big-endian, of the parts' encoding ({@link #encode}). Shared
 * as source by the Java modules that derive ids (the Neo4j plugin's DerivedIds, the capture
 * jar's plan placement): each pom adds this directory to its sources. BLAKE2b (RFC 7693) is
 * written here with an 8-byte digest and no key, what Python's {@code hashlib.blake2b(data,
 * digest_size=8)} computes: the JDK has no BLAKE2, and neither Neo4j's nor Spark's classpath is
 * a place to lean on for one.
 */
public final class Salts {
  private static final long[] IV = {
    0x6a09e667f3bcc908L, 0xbb67ae8584caa73bL, 0x3c6ef372fe94f82bL, 0xa54ff53a5f1d36f1L,
    0x510e527fade682d1L, 0x9b05688c2b3e6c1fL, 0x1f83d9abfb41bd6bL, 0x5be0cd19137e2179L
  };
  private static final int[][] SIGMA = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0}
  };
  private static final int BLOCK = 128;
  private static final int DIGEST = 8;

  private Salts() {}

  /** {@code salt_of(*parts)} for parts that are strings and integers. */
  public static long salt(Object... parts) {
    byte[] digest = digest8(encode(parts));
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
  public static byte[] encode(Object... parts) {
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

  /** BLAKE2b of {@code data} with an 8-byte digest. */
  public static byte[] digest8(byte[] data) {
    long[] h = IV.clone();
    h[0] ^= 0x01010000L ^ DIGEST;
    int blocks = Math.max(1, (data.length + BLOCK - 1) / BLOCK);
    for (int b = 0; b < blocks; b++) {
      boolean last = b == blocks - 1;
      long counter = last ? data.length : (long) (b + 1) * BLOCK;
      compress(h, words(data, b * BLOCK), counter, last);
    }
    byte[] out = new byte[DIGEST];
    for (int i = 0; i < DIGEST; i++) {
      out[i] = (byte) (h[0] >>> (8 * i));
    }
    return out;
  }

  /** One block's 16 little-endian words, zero-padded past the data's end. */
  private static long[] words(byte[] data, int offset) {
    long[] m = new long[16];
    for (int i = 0; i < BLOCK && offset + i < data.length; i++) {
      m[i / 8] |= (data[offset + i] & 0xFFL) << (8 * (i % 8));
    }
    return m;
  }

  private static void compress(long[] h, long[] m, long counter, boolean last) {
    long[] v = new long[16];
    System.arraycopy(h, 0, v, 0, 8);
    System.arraycopy(IV, 0, v, 8, 8);
    v[12] ^= counter;
    if (last) {
      v[14] = ~v[14];
    }
    for (int round = 0; round < 12; round++) {
      int[] s = SIGMA[round % 10];
      mix(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
      mix(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
      mix(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
      mix(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
      mix(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
      mix(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
      mix(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
      mix(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) {
      h[i] ^= v[i] ^ v[i + 8];
    }
  }

  private static void mix(long[] v, int a, int b, int c, int d, long x, long y) {
    v[a] = v[a] + v[b] + x;
    v[d] = Long.rotateRight(v[d] ^ v[a], 32);
    v[c] = v[c] + v[d];
    v[b] = Long.rotateRight(v[b] ^ v[c], 24);
    v[a] = v[a] + v[b] + y;
    v[d] = Long.rotateRight(v[d] ^ v[a], 16);
    v[c] = v[c] + v[d];
    v[b] = Long.rotateRight(v[b] ^ v[c], 63);
  }
}
