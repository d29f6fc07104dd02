// The trace viewer's page: pick a run, find rows, draw a row's trace with cytoscape.js and its
// dagre layout, expand it level by level, collapse modules, and show what a deletion removes.
// All data comes from the viewer's JSON API (/api/...); `window.viewer` exposes the state for
// the browser test.
"use strict";

const OP_COLOURS = {
  TOKEN: "#4e79a7", PLUS: "#59a14f", TIMES: "#f28e2b", DELTA: "#e15759",
  AGGREGATE: "#b07aa1", TENSOR: "#9c755f", VALUE: "#8c8c8c", MODULE: "#d4a017",
  BLACK_BOX: "#76b7b2", EXCLUDED: "#ff9da7", UNSPECIFIED: "#cccccc",
};

if (typeof cytoscapeDagre !== "undefined") cytoscape.use(cytoscapeDagre);

const $ = (id) => document.getElementById(id);
const state = {
  config: { default_depth: 6, default_nodes: 300, token_required: false },
  run: "",
  roots: [],          // the traced node ids
  backward: true,
  zoomed: [],         // modules collapsed
  modules: new Set(), // modules seen in the drawn trace
  truncated: false,
  deletion: null,     // the last PropagateDeletion answer
};

function token() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) sessionStorage.setItem("sparkprov-token", fromHash);
  let t = sessionStorage.getItem("sparkprov-token") || "";
  if (!t && state.config.token_required) {
    t = window.prompt("Bearer token of the query service (SPARKPROV_QUERY_TOKEN):") || "";
    sessionStorage.setItem("sparkprov-token", t);
  }
  return t;
}

async function api(path, body) {
  const headers = { "Content-Type": "application/json" };
  const t = state.config.token_required ? token() : "";
  if (t) headers.Authorization = "Bearer " + t;
  const response = await fetch(path, body === undefined
    ? { headers } : { method: "POST", headers, body: JSON.stringify(body) });
  const payload = await response.json();
  if (!response.ok) {
    if (response.status === 401) sessionStorage.removeItem("sparkprov-token");
    throw new Error(payload.error || response.statusText);
  }
  return payload;
}

function status(text, error = false) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}

function fail(error) {
  status(error.message, true);
}

// -- the graph ----------------------------------------------------------------------------

function nodeText(n) {
  let head = `${n.op} ${n.label}`;
  if (n.relation) head = `${n.op} · ${n.relation}`;
  else if (n.op === "AGGREGATE") head = n.op;
  const lines = [head];
  if (n.relation && n.op === "TOKEN") lines.push(n.label);
  if (n.op === "AGGREGATE") lines.push(`${n.label} = ${n.value}`);
  else if (n.value && !n.relation && n.value !== n.label) lines.push(n.value);
  for (const [k, v] of Object.entries(n.attributes || {})) lines.push(`${k}=${v}`);
  return lines.join("\n");
}

const cy = cytoscape({
  container: $("graph"),
  wheelSensitivity: 0.3,
  boxSelectionEnabled: true,
  selectionType: "additive",
  style: [
    { selector: "node", style: {
      shape: "round-rectangle", "background-color": "data(colour)", label: "data(text)",
      color: "#fff", "font-size": 11, "text-wrap": "wrap", "text-valign": "center",
      "text-halign": "center", width: "label", height: "label", padding: "8px",
      "border-width": 1, "border-color": "#333" } },
    { selector: "node.root", style: { "border-width": 3, "border-color": "#111" } },
    { selector: "node.frontier", style: { "border-style": "dashed", "border-width": 3,
      "border-color": "#111" } },
    { selector: "node:selected", style: { "underlay-color": "#1f6feb", "underlay-opacity": 0.45,
      "underlay-padding": 7, "underlay-shape": "round-rectangle" } },
    { selector: "node.deleted", style: { "background-color": "#b00020", "border-color": "#4a000d",
      "border-width": 4, "background-blacken": 0.1 } },
    { selector: "node.recomputed", style: { "border-color": "#ffd400", "border-width": 5,
      "border-style": "double" } },
    { selector: "node.kept", style: { opacity: 0.55 } },
    { selector: "edge", style: {
      width: 1.5, "line-color": "#999", "target-arrow-color": "#999",
      "target-arrow-shape": "triangle", "curve-style": "bezier" } },
    { selector: "edge.deleted", style: { "line-color": "#b00020", "target-arrow-color": "#b00020",
      width: 2.5 } },
  ],
});

function layout() {
  cy.layout({ name: "dagre", rankDir: "BT", nodeSep: 18, rankSep: 45, animate: false,
    fit: true, padding: 30 }).run();
}

function nodeData(n) {
  return { ...n, colour: OP_COLOURS[n.op] || OP_COLOURS.UNSPECIFIED, text: nodeText(n) };
}

// Adds a trace's nodes and edges; a node already drawn keeps its data, a frontier node stops
// being one once it has been expanded.
function addTrace(trace, expanded) {
  const added = [];
  for (const n of trace.nodes) {
    const existing = cy.getElementById(n.id);
    if (existing.nonempty()) {
      if (!n.frontier || existing.id() === expanded) existing.removeClass("frontier");
      continue;
    }
    added.push({ group: "nodes", data: nodeData(n), classes: n.frontier ? "frontier" : "" });
  }
  for (const e of trace.edges) {
    const id = `${e.src}->${e.dst}`;
    if (cy.getElementById(id).empty()) {
      added.push({ group: "edges", data: { id, source: e.src, target: e.dst } });
    }
  }
  cy.add(added);
  if (expanded) cy.getElementById(expanded).removeClass("frontier");
  for (const n of trace.nodes) if (n.op === "MODULE") state.modules.add(n.label);
  state.truncated = state.truncated || trace.truncated;
}

function traceParams(nodeIds) {
  const p = new URLSearchParams();
  for (const id of nodeIds) p.append("node", id);
  p.set("direction", state.backward ? "backward" : "forward");
  p.set("depth", $("depth").value || "0");
  p.set("nodes", $("nodes").value || String(state.config.default_nodes));
  for (const m of state.zoomed) p.append("zoomed", m);
  return p;
}

async function drawTrace(nodeIds) {
  state.roots = nodeIds;
  state.backward = document.querySelector("input[name=direction]:checked").value === "backward";
  state.truncated = false;
  clearDeletion();
  status("tracing…");
  const trace = await api("/api/trace?" + traceParams(nodeIds));
  cy.elements().remove();
  addTrace(trace, null);
  // Opened on #node=ID: show the node's run in the run picker, for the searches that follow.
  const root = trace.nodes.find((n) => n.id === nodeIds[0]);
  if (root && [...$("run").options].some((o) => o.value === root.run_id)) {
    $("run").value = state.run = root.run_id;
  }
  for (const id of nodeIds) cy.getElementById(id).addClass("root");
  layout();
  renderModules();
  report();
}

async function expand(nodeId) {
  // Expanding adds at most `nodes` per click; past the server's cap the page stops growing.
  if (cy.nodes().length >= state.config.max_nodes) {
    throw new Error(`${cy.nodes().length} nodes drawn already (at most ${state.config.max_nodes}):`
      + " trace from a node further up instead");
  }
  status("expanding…");
  const trace = await api("/api/trace?" + traceParams([nodeId]));
  addTrace(trace, nodeId);
  layout();
  renderModules();
  report();
}

function report() {
  const frontier = cy.nodes(".frontier").length;
  const parts = [`${state.backward ? "backward" : "forward"} trace: ${cy.nodes().length} nodes,`
    + ` ${cy.edges().length} edges`];
  if (frontier) parts.push(`${frontier} lead further (dashed: double-click to expand)`);
  if (state.truncated) parts.push("cut at the node limit");
  if (state.zoomed.length) parts.push(`collapsed: ${state.zoomed.join(", ")}`);
  status(parts.join(" · "));
}

// -- controls -----------------------------------------------------------------------------

async function loadRuns() {
  const { runs } = await api("/api/runs");
  runs.sort((a, b) => b.started_unix_ms - a.started_unix_ms);
  const select = $("run");
  select.innerHTML = "";
  for (const r of runs) {
    const option = document.createElement("option");
    option.value = r.run_id;
    const when = r.started_unix_ms ? new Date(r.started_unix_ms).toLocaleString() : "";
    option.textContent = `${r.workflow || "(no workflow)"} · ${r.run_id.slice(0, 12)} · `
      + `${r.state.toLowerCase()} · ${r.node_count} nodes ${when}`;
    select.appendChild(option);
  }
  const wanted = new URLSearchParams(location.hash.slice(1)).get("run");
  if (wanted) {
    if (!runs.some((r) => r.run_id === wanted)) throw new Error(`unknown run ${wanted}`);
    select.value = wanted;
  }
  state.run = select.value;
}

async function search(event) {
  if (event) event.preventDefault();
  const p = new URLSearchParams({ run: $("run").value, relation: $("relation").value.trim() });
  for (const pair of $("where").value.split(",")) {
    if (pair.trim()) p.append("where", pair.trim());
  }
  const found = await api("/api/find?" + p);
  const columns = [...new Set(found.nodes.flatMap((n) => Object.keys(n.attributes)))].sort();
  const table = document.createElement("table");
  table.innerHTML = "<tr>" + columns.map((c) => `<th>${escape(c)}</th>`).join("") + "</tr>";
  for (const n of found.nodes) {
    const tr = document.createElement("tr");
    tr.className = "result";
    tr.dataset.nodeId = n.id;
    tr.innerHTML = columns.map((c) => `<td>${escape(n.attributes[c] ?? "")}</td>`).join("");
    tr.addEventListener("click", () => {
      for (const row of table.querySelectorAll("tr.active")) row.classList.remove("active");
      tr.classList.add("active");
      drawTrace([n.id]).catch(fail);
    });
    table.appendChild(tr);
  }
  const results = $("results");
  results.innerHTML = found.nodes.length ? "" : "<p class=hint>No row matches.</p>";
  if (found.nodes.length) results.appendChild(table);
  if (found.more) results.insertAdjacentHTML("beforeend", "<p class=hint>More rows match.</p>");
  status(`${found.nodes.length}${found.more ? "+" : ""} ${p.get("relation")} rows: click one`);
}

function escape(text) {
  const div = document.createElement("div");
  div.textContent = String(text);
  return div.innerHTML;
}

function renderModules() {
  for (const m of state.zoomed) state.modules.add(m);
  $("modules-section").hidden = state.modules.size === 0;
  const box = $("modules");
  box.innerHTML = "";
  for (const m of [...state.modules].sort()) {
    const label = document.createElement("label");
    const input = document.createElement("input");
    input.type = "checkbox";
    input.checked = state.zoomed.includes(m);
    input.addEventListener("change", () => {
      state.zoomed = input.checked ? [...state.zoomed, m] : state.zoomed.filter((z) => z !== m);
      drawTrace(state.roots).catch(fail);
    });
    label.append(input, ` collapse ${m}`);
    box.appendChild(label);
  }
}

function showDetails(n) {
  const rows = [["id", n.id], ["op", n.op], ["label", n.label]];
  if (n.relation) rows.push(["relation", n.relation]);
  if (n.value) rows.push(["value", n.value]);
  for (const [k, v] of Object.entries(n.attributes || {})) rows.push([k, v]);
  rows.push(["level", n.level]);
  const draw = () => {
    $("details").innerHTML = "<dl>" + rows.map(([k, v]) =>
      `<dt>${escape(k)}</dt><dd>${escape(v)}</dd>`).join("") + "</dl>";
  };
  draw();
  state.details = n.id;
  if (n.op !== "TOKEN" || !n.relation) return;
  // A source row: where it was read from (its parquet file and row, or Spark's partition).
  api(`/api/locate?node=${encodeURIComponent(n.id)}`).then((answer) => {
    const where = answer.rows[0];
    if (where.by_file) rows.push(["file", where.file], ["row", where.row]);
    else rows.push(["partition", where.partition], ["offset", where.offset]);
    if (state.details === n.id) draw();  // unless another node was chosen meanwhile
  }).catch(() => {});  // the run's marker may not be stored yet: the rest stands
}

function clearDeletion() {
  state.deletion = null;
  cy.elements().removeClass("deleted recomputed kept");
  $("deletion").innerHTML = "";
}

async function showDeletion() {
  const ids = cy.nodes(":selected").map((n) => n.id());
  if (!ids.length) return;
  clearDeletion();
  const answer = await api("/api/deletion", { node_ids: ids, zoomed_out: state.zoomed });
  state.deletion = answer;
  const deleted = new Set(answer.deleted);
  cy.nodes().forEach((n) => n.addClass(deleted.has(n.id()) ? "deleted" : "kept"));
  cy.edges().forEach((e) => {
    if (deleted.has(e.source().id()) || deleted.has(e.target().id())) e.addClass("deleted");
  });
  const items = [];
  for (const r of answer.recomputed) {
    const node = cy.getElementById(r.node_id);
    if (node.nonempty()) node.removeClass("kept").addClass("recomputed");
    items.push(`<li>${escape(r.function)} ${escape(r.old_value)} → <b>${escape(r.new_value)}`
      + `</b> (${r.inputs} input${r.inputs === 1 ? "" : "s"} left)</li>`);
  }
  const drawn = cy.nodes(".deleted").length;
  $("deletion").innerHTML = `<p class=removed>${answer.deleted.length} nodes removed`
    + ` (${drawn} drawn, in red)</p>`
    + (items.length ? `<p>Aggregates recomputed:</p><ul>${items.join("")}</ul>` : "");
  status(`deleting ${ids.length} node(s) removes ${answer.deleted.length}`);
}

cy.on("tap", "node", (event) => showDetails(event.target.data()));
cy.on("dbltap", "node.frontier", (event) => expand(event.target.id()).catch(fail));
cy.on("select unselect", "node", () => {
  $("delete").disabled = cy.nodes(":selected").empty();
});

async function fromHash() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const node = hash.get("node");
  if (hash.get("direction") === "forward") {
    document.querySelector("input[name=direction][value=forward]").checked = true;
  }
  if (node) await drawTrace([node]);
}

async function start() {
  state.config = await (await fetch("/api/config")).json();
  $("depth").value = state.config.default_depth;
  $("nodes").value = state.config.default_nodes;
  $("nodes").max = state.config.max_nodes;
  $("legend").innerHTML = Object.entries(OP_COLOURS).filter(([op]) => op !== "UNSPECIFIED")
    .map(([op, c]) => `<span style="background:${c}">${op}</span>`).join("");
  $("find").addEventListener("submit", (e) => search(e).catch(fail));
  $("run").addEventListener("change", () => { state.run = $("run").value; });
  $("delete").addEventListener("click", () => showDeletion().catch(fail));
  $("clear").addEventListener("click", () => { cy.nodes().unselect(); clearDeletion(); });
  window.addEventListener("hashchange", () => loadRuns().then(fromHash).catch(fail));
  await loadRuns();
  await fromHash();
  if (!state.roots.length) status("Pick a run, find a row, click it.");
}

window.viewer = { cy, state, drawTrace, expand, showDeletion };
start().then(() => { window.viewer.ready = true; }).catch((e) => {
  window.viewer.ready = true;
  fail(e);
});
