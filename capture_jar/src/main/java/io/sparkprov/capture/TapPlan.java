package io.sparkprov.capture;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.List;

/**
 * What one capture point emits: the contract between the Python capture agent, which builds it
 * from a tap spec (capture_agent/jvm.py, {@code TapPlan}), and the JVM tap, which runs it. The
 * field names are the JSON keys of the Python TypedDict.
 *
 * @param kind which nodes and edges a row yields (see {@link Emission})
 * @param inputs the tap's input columns, in the order of the struct the tap receives; the
 *     relation's attribute columns follow them
 * @param inputTypes per input: "id" (a bigint id, maybe null), "ids" (an array of ids),
 *     "text" (a string, maybe null) or "flag" (a boolean)
 * @param salts the derived-id salts (sparkprov/derived.py's salt_of, computed by Python): per
 *     aggregated column for groups and windows, the PLUS salt of a semi join
 * @param origins a join's, per side (left, right): the capture key of the source whose TOKEN
 *     ids the side holds, or "" (the side then travels as ids, not positions); a member tap's:
 *     those of the join whose rows the members are, or the one source whose rows they are
 * @param pairKey a member tap's over a join's rows: the join's key (its inputs "left" and
 *     "right" hold the pairs), else ""
 * @param valuesRead the relation keeps only the attributes the query reads after the tap
 *     ({@code values="read"}): {@link ValuesPruning} drops the others from the optimized plan,
 *     so the scan does not read them for the tap alone
 * @param valueOf a member tap's whose aggregates share inputs ({@code sum(amount)} and {@code
 *     avg(amount)}): per aggregated column, which of the value inputs {@code x0}, {@code x1}, ...
 *     holds its members' values (lineage.proto's {@code MemberBlock.value_of}); empty where
 *     column {@code i} is input {@code xi}
 */
@JsonIgnoreProperties(ignoreUnknown = false)
public record TapPlan(
    @JsonProperty("kind") String kind,
    @JsonProperty("key") String key,
    @JsonProperty("run_id") String runId,
    @JsonProperty("workflow") String workflow,
    @JsonProperty("relation") String relation,
    @JsonProperty("attributes") List<String> attributes,
    @JsonProperty("inputs") List<String> inputs,
    @JsonProperty("input_types") List<String> inputTypes,
    @JsonProperty("split") List<String> split,
    @JsonProperty("label") String label,
    @JsonProperty("module") long module,
    @JsonProperty("functions") List<String> functions,
    @JsonProperty("group_key") String groupKey,
    @JsonProperty("delta") boolean delta,
    @JsonProperty("aggregates") int aggregates,
    @JsonProperty("salts") List<Long> salts,
    @JsonProperty("origins") List<String> origins,
    @JsonProperty("pair_key") String pairKey,
    @JsonProperty("rows_per_message") int rowsPerMessage,
    @JsonProperty("max_text_bytes") int maxTextBytes,
    @JsonProperty("values_read") boolean valuesRead,
    @JsonProperty("value_of") List<Integer> valueOf)
    implements Serializable {

  private static final ObjectMapper JSON = new ObjectMapper();

  public TapPlan {
    valueOf = valueOf == null ? List.of() : List.copyOf(valueOf);
    if (!valueOf.isEmpty() && valueOf.size() != aggregates) {
      throw new IllegalArgumentException("tap " + key + ": value_of has " + valueOf.size()
          + " entries for " + aggregates + " aggregates");
    }
    if (inputs.size() != inputTypes.size()) {
      throw new IllegalArgumentException("tap " + key + ": inputs and input_types differ in size");
    }
    if (rowsPerMessage < 1) {
      throw new IllegalArgumentException("tap " + key + ": rows_per_message must be positive");
    }
    Emission.Kind.of(kind); // refuses an unknown kind here, on the driver
  }

  /** A plan whose aggregated columns each have an input of their own (no {@code value_of}). */
  public TapPlan(String kind, String key, String runId, String workflow, String relation,
      List<String> attributes, List<String> inputs, List<String> inputTypes, List<String> split,
      String label, long module, List<String> functions, String groupKey, boolean delta,
      int aggregates, List<Long> salts, List<String> origins, String pairKey, int rowsPerMessage,
      int maxTextBytes, boolean valuesRead) {
    this(kind, key, runId, workflow, relation, attributes, inputs, inputTypes, split, label,
        module, functions, groupKey, delta, aggregates, salts, origins, pairKey, rowsPerMessage,
        maxTextBytes, valuesRead, List.of());
  }

  /** The value input ({@code x0}, {@code x1}, ...) that holds aggregated column {@code i}. */
  int valueInput(int i) {
    return valueOf.isEmpty() ? i : valueOf.get(i);
  }

  /** How many value inputs a member tap has: its distinct aggregated inputs. */
  int valueInputs() {
    int count = 0;
    for (int i = 0; i < aggregates; i++) {
      count = Math.max(count, valueInput(i) + 1);
    }
    return count;
  }

  /** This plan keeping only {@code kept} of its attributes (in their order). */
  TapPlan keeping(List<String> kept) {
    if (!attributes.containsAll(kept)) {
      throw new IllegalArgumentException("tap " + key + " has no attributes " + kept);
    }
    return new TapPlan(kind, key, runId, workflow, relation, List.copyOf(kept), inputs, inputTypes,
        split, label, module, functions, groupKey, delta, aggregates, salts, origins, pairKey,
        rowsPerMessage, maxTextBytes, valuesRead, valueOf);
  }

  /** This plan with its nodes labelled {@code newLabel} (a BLACK_BOX's functions). */
  TapPlan labelled(String newLabel) {
    if (newLabel.equals(label)) {
      return this;
    }
    return new TapPlan(kind, key, runId, workflow, relation, attributes, inputs, inputTypes,
        split, newLabel, module, functions, groupKey, delta, aggregates, salts, origins, pairKey,
        rowsPerMessage, maxTextBytes, valuesRead, valueOf);
  }

  /** This plan without member to DELTA edges (a window partition's members: no row merged). */
  TapPlan withoutDelta() {
    return new TapPlan(kind, key, runId, workflow, relation, attributes, inputs, inputTypes,
        split, label, module, functions, groupKey, false, aggregates, salts, origins, pairKey,
        rowsPerMessage, maxTextBytes, valuesRead, valueOf);
  }

  public static TapPlan parse(String json) {
    try {
      return JSON.readValue(json, TapPlan.class);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("not a tap plan: " + e.getMessage(), e);
    }
  }

  /** Position of input {@code name} in the tap's struct. */
  public int input(String name) {
    int i = inputs.indexOf(name);
    if (i < 0) {
      throw new IllegalStateException("tap " + key + " has no input " + name);
    }
    return i;
  }

  /** Position of attribute {@code i} in the tap's struct (after the inputs). */
  public int attribute(int i) {
    return inputs.size() + i;
  }

  public int width() {
    return inputs.size() + attributes.size();
  }
}
