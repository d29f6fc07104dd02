package io.sparkprov.plugin.graph;

/**
 * A DERIVES edge by its ends' node ids, from the node that is used to the node derived from it:
 * what a write hands id maintenance, and what the indexer reads back from {@code :IdWork}.
 */
public record Edge(long src, long dst) {}
