// The constraints and indexes of the stored graph (docs/graph-schema.md), and the few statements
// that bring an older database up to them: the one definition. Ingest runs them in this order at
// startup (ingest_service.store.Store.ensure_schema, through sparkprov.schema), and the Neo4j
// plugin's tests run them on their embedded database (neo4j_plugin, EmbeddedNeo4j), so the
// plugin's seeks meet the same indexes as in production. Every statement is idempotent.
//
// Format, read alike by both: a line whose first non-blank characters are // is a comment;
// statements end with ; and may span lines. So no statement may hold ; or start a line with //.

CREATE CONSTRAINT sp_node_id IF NOT EXISTS FOR (n:Node) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT sp_run_id IF NOT EXISTS FOR (r:Run) REQUIRE r.run_id IS UNIQUE;
CREATE CONSTRAINT sp_component_id IF NOT EXISTS FOR (c:Component) REQUIRE c.id IS UNIQUE;
CREATE CONSTRAINT sp_level_set_key IF NOT EXISTS FOR (s:LevelSet) REQUIRE s.key IS UNIQUE;
CREATE CONSTRAINT sp_set_id IF NOT EXISTS FOR (s:ConnectedSet) REQUIRE s.id IS UNIQUE;

// Ids are kept by reference (docs/graph-schema.md, "Component and set ids"): a node's
// component_id and s0..s2 (one per split level, ingest_service.levels.LEVELS) are the ids it was
// born with, read to resolve its ids and never sought (a group's members are walked from its
// founding node, Forest.members), so they have no index to keep at every write; a database made
// before loses the ones it had.
DROP INDEX sp_node_set IF EXISTS;
DROP INDEX sp_node_component IF EXISTS;
DROP INDEX sp_node_s0 IF EXISTS;
DROP INDEX sp_node_s1 IF EXISTS;
DROP INDEX sp_node_s2 IF EXISTS;
CREATE INDEX sp_set_component IF NOT EXISTS FOR (s:ConnectedSet) ON (s.component_id);

// Writers and the indexer meet at one barrier node (IdWork.java): made here, once.
CREATE CONSTRAINT sp_id_barrier IF NOT EXISTS FOR (b:IdBarrier) REQUIRE b.name IS UNIQUE;
MERGE (:IdBarrier {name: 'ids'});

// Only placeholders hold pending_run, so this index holds only them (Schema.PENDING in the
// plugin).
CREATE INDEX sp_node_pending IF NOT EXISTS FOR (n:Node) ON (n.pending_run);
CREATE INDEX sp_node_relation IF NOT EXISTS FOR (n:Node) ON (n.run_id, n.relation);
CREATE INDEX sp_run_workflow IF NOT EXISTS FOR (r:Run) ON (r.workflow);

// Group members are stored as member edges (sparkprov.blocks.MemberBlock); the query service
// finds the member edge of a derived TENSOR or VALUE id by its pair, under one of the group
// keys registered here.
CREATE CONSTRAINT sp_member_key IF NOT EXISTS FOR (k:MemberKey) REQUIRE k.key IS UNIQUE;
CREATE INDEX sp_member_pair IF NOT EXISTS FOR ()-[r:DERIVES]-() ON (r.pair);
// A join's rows folded into their member edges (docs/graph-schema.md, "A join's rows folded
// into their member edges"): a folded TIMES id is found by `times`, a right row's joined rows by
// `partner`.
CREATE INDEX sp_member_times IF NOT EXISTS FOR ()-[r:DERIVES]-() ON (r.times);
CREATE INDEX sp_member_partner IF NOT EXISTS FOR ()-[r:DERIVES]-() ON (r.partner);

// Workflow versions (ingest_service.versions, docs/versions.md): every write is a MERGE on a
// constrained key.
CREATE CONSTRAINT sp_version_key IF NOT EXISTS FOR (v:Version) REQUIRE v.key IS UNIQUE;
CREATE CONSTRAINT sp_workflow_name IF NOT EXISTS FOR (w:Workflow) REQUIRE w.name IS UNIQUE;
CREATE INDEX sp_version_seq IF NOT EXISTS FOR (v:Version) ON (v.workflow, v.seq);
CREATE INDEX sp_version_id IF NOT EXISTS FOR (v:Version) ON (v.id);

// Runs completed before completion counted dangling nodes get their count: the query service
// reports a run complete only with the properties its completion writes
// (query_service.store.run_view).
MATCH (run:Run) WHERE run.complete AND run.dangling_nodes IS NULL
OPTIONAL MATCH (ghost:Node {pending_run: run.run_id})
WITH run, count(ghost) AS dangling
SET run.dangling_nodes = dangling;
