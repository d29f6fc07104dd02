package io.sparkprov.plugin.write;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Reads the typed fields of one block map as the procedure receives it from Bolt (strings,
 * booleans, lists, integers as {@code Long}). Every error names the block and the field, so a
 * malformed flush fails with a message that says what to fix rather than a ClassCastException.
 */
final class BlockFields {
  private final Map<String, Object> map;
  private final String where;

  BlockFields(Map<String, Object> map, String where) {
    if (map == null) {
      throw new IllegalArgumentException(where + " is null");
    }
    this.map = map;
    this.where = where;
  }

  IllegalArgumentException error(String field, String problem) {
    return new IllegalArgumentException(where + ": field '" + field + "' " + problem);
  }

  private Object required(String field) {
    Object value = map.get(field);
    if (value == null) {
      throw error(field, map.containsKey(field) ? "is null" : "is missing");
    }
    return value;
  }

  private static String typeOf(Object value) {
    return value == null ? "null" : value.getClass().getSimpleName();
  }

  String string(String field) {
    Object value = required(field);
    if (!(value instanceof String s)) {
      throw error(field, "must be a string, got " + typeOf(value));
    }
    return s;
  }

  /** A string, or null when the field is absent or null. */
  String optionalString(String field) {
    return map.get(field) == null ? null : string(field);
  }

  /** Integers, or none when the field is absent (a field a newer contract added). */
  long[] optionalLongs(String field) {
    return map.containsKey(field) ? longs(field) : new long[0];
  }

  /** Strings, or none when the field is absent (a field a newer contract added). */
  List<String> optionalStrings(String field) {
    return map.containsKey(field) ? strings(field) : List.of();
  }

  boolean bool(String field) {
    Object value = required(field);
    if (!(value instanceof Boolean b)) {
      throw error(field, "must be a boolean, got " + typeOf(value));
    }
    return b;
  }

  private List<?> list(String field) {
    Object value = required(field);
    if (!(value instanceof List<?> list)) {
      throw error(field, "must be a list, got " + typeOf(value));
    }
    return list;
  }

  /** A single integer. */
  long integer(String field) {
    return integer(field, required(field));
  }

  long[] longs(String field) {
    List<?> list = list(field);
    long[] out = new long[list.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = integer(field + "[" + i + "]", list.get(i));
    }
    return out;
  }

  List<String> strings(String field) {
    return strings(field, list(field));
  }

  private List<String> strings(String field, List<?> list) {
    List<String> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      Object value = list.get(i);
      if (!(value instanceof String s)) {
        throw error(field + "[" + i + "]", "must be a string, got " + typeOf(value));
      }
      out.add(s);
    }
    return out;
  }

  /** A list of lists of strings (one column per attribute). */
  List<List<String>> stringColumns(String field) {
    List<?> list = list(field);
    List<List<String>> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      String name = field + "[" + i + "]";
      if (!(list.get(i) instanceof List<?> column)) {
        throw error(name, "must be a list, got " + typeOf(list.get(i)));
      }
      out.add(strings(name, column));
    }
    return out;
  }

  /** A list of lists of integers (one list of row positions per attribute). */
  List<long[]> longColumns(String field) {
    List<?> list = list(field);
    List<long[]> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      String name = field + "[" + i + "]";
      if (!(list.get(i) instanceof List<?> column)) {
        throw error(name, "must be a list, got " + typeOf(list.get(i)));
      }
      long[] values = new long[column.size()];
      for (int j = 0; j < values.length; j++) {
        values[j] = integer(name + "[" + j + "]", column.get(j));
      }
      out.add(values);
    }
    return out;
  }

  private long integer(String field, Object value) {
    // Bolt hands integers over as Long; Integer/Short/Byte come from embedded callers.
    if (value instanceof Long || value instanceof Integer || value instanceof Short
        || value instanceof Byte) {
      return ((Number) value).longValue();
    }
    throw error(field, "must be an integer, got " + typeOf(value));
  }
}
