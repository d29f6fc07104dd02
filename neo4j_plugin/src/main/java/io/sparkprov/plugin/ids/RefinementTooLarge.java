package io.sparkprov.plugin.ids;

/**
 * An index call whose writes make sets grow past theta with more edges to re-read than its
 * bound allows ({@link IdMaintenance}): it rolls back, and ingest's indexer calls again with
 * fewer edges (ingest_service.store.IndexCallTooLarge). A call of one write is never refused.
 */
public final class RefinementTooLarge extends RuntimeException {
  /** What ingest recognises in the message, whatever Neo4j wraps around it. */
  public static final String MARK = "call again with fewer edges";

  RefinementTooLarge(int sets, long bound) {
    super(
        "sparkprov.index: the writes of this call refine "
            + sets
            + " connected sets, whose members' edges are more than "
            + bound
            + " to read again; "
            + MARK);
  }
}
