package io.sparkprov.plugin.query;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The few protobuf wire-format writes the trace message needs (varints, length-delimited fields,
 * a fixed64 double), into a growing array. Proto3 rules: fields at their default value (empty
 * text, zero, false) are not written.
 */
final class ProtoWriter {
  private static final int VARINT = 0;
  private static final int FIXED64 = 1;
  private static final int LENGTH_DELIMITED = 2;

  private final byte[] digits = new byte[20]; // "-9223372036854775808"
  private byte[] buf = new byte[256];
  private int size;

  ProtoWriter varint(int field, long value) {
    if (value != 0) {
      tag(field, VARINT);
      rawVarint(value);
    }
    return this;
  }

  ProtoWriter bool(int field, boolean value) {
    return varint(field, value ? 1 : 0);
  }

  ProtoWriter fixedDouble(int field, double value) {
    if (value != 0) {
      tag(field, FIXED64);
      long bits = Double.doubleToRawLongBits(value);
      ensure(8);
      for (int i = 0; i < 8; i++) {
        buf[size++] = (byte) (bits >>> (8 * i));
      }
    }
    return this;
  }

  ProtoWriter string(int field, String value) {
    if (value != null && !value.isEmpty()) {
      bytes(field, value.getBytes(StandardCharsets.UTF_8));
    }
    return this;
  }

  /** A string field written even when empty (null as empty), as a map entry's key and value are. */
  ProtoWriter text(int field, String value) {
    bytes(field, value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8));
    return this;
  }

  /**
   * A long as a string field of its decimal digits, as {@code string(field,
   * Long.toString(value))} writes it but without building the string (a trace writes two ids per
   * edge and three per node).
   */
  ProtoWriter decimal(int field, long value) {
    int pos = digits.length;
    long v = value;
    do {
      digits[--pos] = (byte) ('0' + Math.abs(v % 10));
      v /= 10;
    } while (v != 0);
    if (value < 0) {
      digits[--pos] = '-';
    }
    tag(field, LENGTH_DELIMITED);
    rawVarint(digits.length - pos);
    ensure(digits.length - pos);
    System.arraycopy(digits, pos, buf, size, digits.length - pos);
    size += digits.length - pos;
    return this;
  }

  /** {@link #decimal}, or nothing for null. */
  ProtoWriter decimalOrNone(int field, Long value) {
    return value == null ? this : decimal(field, value);
  }

  /** A length-delimited field, written even when empty (an embedded message with no fields). */
  ProtoWriter message(int field, ProtoWriter message) {
    tag(field, LENGTH_DELIMITED);
    rawVarint(message.size);
    append(message.buf, message.size);
    return this;
  }

  byte[] toByteArray() {
    return Arrays.copyOf(buf, size);
  }

  /** Empties the writer for reuse as another embedded message. */
  ProtoWriter reset() {
    size = 0;
    return this;
  }

  private void bytes(int field, byte[] value) {
    tag(field, LENGTH_DELIMITED);
    rawVarint(value.length);
    append(value, value.length);
  }

  private void tag(int field, int wireType) {
    rawVarint(((long) field << 3) | wireType);
  }

  private void rawVarint(long value) {
    ensure(10);
    while ((value & ~0x7FL) != 0) {
      buf[size++] = (byte) ((value & 0x7F) | 0x80);
      value >>>= 7;
    }
    buf[size++] = (byte) value;
  }

  private void append(byte[] bytes, int length) {
    ensure(length);
    System.arraycopy(bytes, 0, buf, size, length);
    size += length;
  }

  private void ensure(int more) {
    if (size + more > buf.length) {
      buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + more));
    }
  }
}
