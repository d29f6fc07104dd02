package io.sparkprov.plugin.graph;

import io.sparkprov.v1.SplitDepth;
import java.util.stream.IntStream;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.RelationshipType;

/**
 * The names of the stored graph that more than one part of the plugin reads or writes
 * (docs/graph-schema.md): the writer stores them, id maintenance and the queries read them. The
 * constraints and indexes on them are sparkprov/schema.cypher, which ingest runs at startup and
 * the plugin's tests run on their embedded database.
 */
public final class Schema {
  public static final Label NODE = Label.label("Node");
  public static final Label COMPONENT = Label.label("Component");
  public static final Label LEVEL_SET = Label.label("LevelSet");
  public static final Label SET = Label.label("ConnectedSet");
  public static final RelationshipType DERIVES = RelationshipType.withName("DERIVES");
  public static final RelationshipType SET_DEP = RelationshipType.withName("SET_DEP");
  /**
   * The split levels whose sets are kept: lineage.proto's SplitDepth, as
   * ingest_service.levels.LEVELS (a constant javac copies from the generated class).
   */
  public static final int LEVELS = SplitDepth.SPLIT_DEPTH_MAX_VALUE;
  /** The birth id a node carries per level ("s0", ...), as {@link #COMPONENT_ID} per component. */
  public static final String[] LEVEL_KEYS =
      IntStream.range(0, LEVELS).mapToObj(level -> "s" + level).toArray(String[]::new);
  public static final String COMPONENT_ID = "component_id";
  /**
   * A placeholder (an edge's end whose node has not arrived) carries {@code pending_run}: the run
   * of the edge that made it. Filling the node removes it, so at a run's completion the indexed
   * count of nodes still pending for it is the number of never-stored nodes its edges reference.
   */
  public static final String PENDING = "pending_run";
  /**
   * The registry of group keys: one {@code (:MemberKey {key})} per capture point that sent member
   * blocks, with the number of its aggregated columns ({@code aggregates}).
   */
  public static final Label MEMBER_KEY = Label.label("MemberKey");
  public static final String KEY = "key";
  public static final String AGGREGATES = "aggregates";
  /**
   * A member edge (the writer's {@code MemberBlock}) is a DERIVES edge with these properties: its
   * group key, its values per aggregated column ({@code ""} where null), the null columns'
   * indexes (absent when none) and the id the query service looks the member up by.
   */
  public static final String MEMBER_KEY_PROPERTY = "member_key";
  public static final String MEMBER_VALUES = "member_values";
  public static final String MEMBER_NULLS = "member_nulls";
  public static final String PAIR = "pair";
  /**
   * A member edge whose member is a join's row folded into it (docs/graph-schema.md, "A join's
   * rows folded into their member edges") starts at the row's left parent and carries the TIMES
   * node's id ({@code times}) and its right parent's id ({@code partner}), both indexed; the right
   * parent has one {@code PARTNER} relationship to the group's DELTA row (not a logical edge).
   */
  public static final String TIMES = "times";
  public static final String PARTNER_PROPERTY = "partner";
  public static final RelationshipType PARTNER = RelationshipType.withName("PARTNER");

  private Schema() {}
}
