package io.sparkprov.capture;

/** Relation names the capture extension gives what a query writes. */
final class RelationNames {
  private RelationNames() {}

  /** A relation name from a path's last part, without its extension, in letters, digits and _
   * (capture_agent/actions.py's _relation_of); null when nothing is left (the result is then
   * named result<n>). */
  static String ofPath(String last) {
    String name = last.split("\\.")[0].replaceAll("[^A-Za-z0-9_]", "_").replaceAll("^_+|_+$", "");
    return name.isEmpty() ? null : name;
  }
}
