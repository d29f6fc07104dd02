package io.sparkprov.plugin.query;

import java.util.HashMap;
import java.util.Map;

/**
 * A node of the logical graph as the query service shows it (query_service.model.NodeView, and
 * the {@code Node} message of proto/sparkprov/v1/query.proto): its ids current, {@code component}
 * and {@code set} null for a node with no stored carrier.
 */
record NodeView(
    long id,
    String runId,
    String op,
    String label,
    String relation,
    Map<String, String> attributes,
    String value,
    Long component,
    Long set) {

  /** The map sparkprov.trace yields per node (read by query_service/store.py's _view). */
  Map<String, Object> asMap() {
    Map<String, Object> out = new HashMap<>();
    out.put("id", id);
    out.put("op", op);
    out.put("label", label);
    out.put("relation", relation);
    out.put("value", value);
    out.put("attributes", new HashMap<String, Object>(attributes));
    out.put("run_id", runId);
    out.put("component", component);
    out.put("set", set);
    return out;
  }
}
