"""Reference implementations the production code is checked against: the trace strategies,
Subgraph and deletion propagation in Python over plain graph reads (the plugin runs them inside
Neo4j), and CSProv's connected sets from scratch (the ids ingest keeps incrementally)."""
