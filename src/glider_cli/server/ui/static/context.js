// Context: the store's query box, an entity's neighbourhood, communities, continuity, maintenance.
"use strict";

(() => {
  const { h, clear, fill, api, card, table } = G;
  const out = {
    query: h("div", { id: "query-result", "aria-live": "polite" }),
    explain: h("div", { id: "explain-graph", "aria-live": "polite" }),
    communities: h("div", { id: "communities-result" }),
    continuity: h("div", { id: "continuity-result" }),
    upkeep: h("div", { id: "upkeep-result", "aria-live": "polite" }),
  };
  const turns = h("datalist", { id: "turn-ids" }, h("option", { value: "*" }, "every turn"));

  function resultTable(rows) {
    return table([{ label: "Id" }, { label: "Kind" }, { label: "Name" }, { label: "Path" }, { label: "Prov" }, { label: "Score", num: true }, { label: "Turn" }],
      rows.map((r) => [h("code", {}, r.id), r.kind, r.name || "", r.path || "", r.prov || "", typeof r.score === "number" ? r.score.toFixed(2) : "", r.turn || ""]),
      { empty: "No matches." });
  }

  function communitiesView(c) {
    return h("div", {}, h("p", {}, `${c.count} communit${c.count === 1 ? "y" : "ies"} (${c.algorithm})`),
      table([{ label: "#", num: true }, { label: "Size", num: true }, { label: "Hub" }, { label: "Members" }],
        c.communities.map((x) => [String(x.id), String(x.size), h("code", {}, x.hub), h("span", { class: "wrap small" }, x.members.join(", "))]),
        { empty: "No communities in scope." }));
  }

  // The neighbours of the first few neighbours, for the graph's outer ring.
  async function secondRing(ex, turn) {
    const out = new Map();
    const near = (ex.neighbours || []).slice(0, 8);
    await Promise.all(near.map(async (n) => {
      try {
        const rows = await api("/api/context/query?q=" + encodeURIComponent(`${turn} neigh=${n.id} limit=6`));
        out.set(n.id, rows.filter((r) => r.id !== ex.entity.id));
      } catch (e) { /* drawn without its outer ring */ }
    }));
    return out;
  }

  function explainView(ex, turn, second) {
    const pick = (id) => runExplain(turn, id);
    return h("div", { class: "stack" },
      h("p", {}, h("code", {}, ex.entity.id), ` · degree ${ex.degree} · component of ${ex.component_size}`,
        ex.nearest_hub ? [" · nearest hub ", h("code", {}, ex.nearest_hub)] : ""),
      G.neighbourGraph(ex, pick, second),
      h("p", { class: "small muted" }, "Select a neighbour (click, or Tab then Enter) to explain it in turn."),
      h("h3", {}, "Neighbours"),
      table([{ label: "Entity" }, { label: "Edge" }, { label: "Direction" }, { label: "Kind" }, { label: "Degree", num: true }],
        ex.neighbours.map((n) => [h("code", {}, n.id), n.edge || "", n.direction || "", n.kind, String(n.score)]), { empty: "No neighbours." }));
  }

  function anyAnswer(data, turn) {
    if (Array.isArray(data)) return resultTable(data);
    if (data && data.entity) return explainView(data, turn);
    if (data && data.communities) return communitiesView(data);
    if (data && Array.isArray(data.path)) {
      return h("div", {}, h("p", {}, data.found ? `Path of length ${data.length}` : "No path."), resultTable(data.path));
    }
    return h("pre", {}, JSON.stringify(data, null, 2));
  }

  function form(id, fields, button, onSubmit) {
    const f = h("form", { id, class: "row" }, fields, h("button", { class: "primary", type: "submit" }, button));
    f.addEventListener("submit", (ev) => { ev.preventDefault(); onSubmit(); });
    return f;
  }

  function field(id, label, attrs = {}) {
    const input = h("input", { id, name: id, ...attrs });
    return [h("label", { for: id }, label), input];
  }

  // --- query -------------------------------------------------------------------------------------
  const [qLabel, q] = field("q", "Query", { class: "wide mono", placeholder: "* parser OR lexer   ·   <turn> kind=file   ·   <turn> explain=<id>", list: "turn-ids", autocomplete: "off" });
  async function runQuery() {
    clear(out.query);
    try {
      const data = await api("/api/context/query?q=" + encodeURIComponent(q.value));
      out.query.append(anyAnswer(data, q.value.trim().split(/\s+/)[0]));
    } catch (e) {
      out.query.append(G.errorBox(e));
      if (e.body && e.body.error && typeof e.body.error.position === "number") {
        out.query.append(h("pre", {}, q.value + "\n" + " ".repeat(e.body.error.position) + "^"));
      }
    }
  }

  // --- explain ------------------------------------------------------------------------------------
  const [etLabel, eTurn] = field("explain-turn", "Turn", { value: "*", list: "turn-ids", size: 14, class: "mono" });
  const [eiLabel, eId] = field("explain-id", "Entity id", { class: "wide mono", placeholder: "file:src/app.py" });
  async function runExplain(turn, id) {
    eTurn.value = turn;
    eId.value = id;
    clear(out.explain);
    try {
      const qs = "turn_id=" + encodeURIComponent(turn) + "&id=" + encodeURIComponent(id);
      const ex = await api("/api/context/explain?" + qs);
      out.explain.append(explainView(ex, turn, await secondRing(ex, turn)));
    } catch (e) {
      out.explain.append(G.errorBox(e));
    }
  }

  // --- communities -----------------------------------------------------------------------------------
  const [ctLabel, cTurn] = field("communities-turn", "Turn", { value: "*", list: "turn-ids", size: 14, class: "mono" });
  const algo = h("select", { id: "communities-algorithm", "aria-label": "Algorithm" }, h("option", { value: "components" }, "connected components"), h("option", { value: "louvain" }, "louvain"));
  async function runCommunities() {
    clear(out.communities);
    try {
      const qs = "turn_id=" + encodeURIComponent(cTurn.value) + "&algorithm=" + algo.value;
      out.communities.append(communitiesView(await api("/api/context/communities?" + qs)));
    } catch (e) {
      out.communities.append(G.errorBox(e));
    }
  }

  // --- continuity -------------------------------------------------------------------------------------
  // A delegate's outcome is shown whole: it ends with what the run changed (files, lines, the hunks).
  function entryText(e) {
    if (e.kind === "delegate") return h("pre", { class: "wrap small delegate-outcome" }, e.text);
    return h("span", { class: "wrap small" }, e.text.slice(0, 400));
  }
  const workspaces = h("datalist", { id: "workspaces" });
  const [wLabel, ws] = field("workspace", "Workspace", { class: "wide mono", list: "workspaces", placeholder: "/path/to/repo" });
  const [tLabel, task] = field("task", "Task (for the block)", { class: "wide", placeholder: "fix the failing parser test" });
  async function showRecord() {
    clear(out.continuity);
    try {
      const r = await api("/api/continuity/record?workspace=" + encodeURIComponent(ws.value));
      out.continuity.append(h("p", { class: "small muted" }, "Record: ", h("code", {}, r.record)),
        table([{ label: "#", num: true }, { label: "Kind" }, { label: "When" }, { label: "Source CLI" }, { label: "Text" }],
          r.entries.map((e, i) => [String(i + 1), e.kind, G.when(e.ts), e.source_cli || "", entryText(e)]),
          { empty: "No entries for this workspace yet." }));
    } catch (e) {
      out.continuity.append(G.errorBox(e));
    }
  }
  async function showBlock() {
    clear(out.continuity);
    try {
      const qs = "workspace=" + encodeURIComponent(ws.value) + "&task=" + encodeURIComponent(task.value);
      const b = await api("/api/continuity/block?" + qs);
      G.add(out.continuity, [h("p", {}, `${b.items.length} entries in the block, about ${b.tokens} tokens; ${b.excluded.length} left out.`),
        table([{ label: "Block" }, { label: "Entry" }, { label: "Kind" }, { label: "Score", num: true }, { label: "Why" }],
          [...b.items.map((i) => ["in", i.id, i.kind, i.score.toFixed(3), i.reason + (i.truncated ? " (truncated)" : "")]),
            ...b.excluded.map((x) => ["out", x.id, x.kind, x.score.toFixed(3), x.reason])], { empty: "The record is empty." }),
        b.text ? h("pre", { id: "block-text" }, b.text) : null]);
    } catch (e) {
      out.continuity.append(G.errorBox(e));
    }
  }

  // --- maintenance (POST, same origin only) -------------------------------------------------------------
  const [pLabel, treePath] = field("index-path", "Directory", { class: "wide mono", placeholder: "/path/to/repo" });
  async function post(path, body, render) {
    clear(out.upkeep);
    try {
      render(await api(path, { body }));
    } catch (e) {
      out.upkeep.append(G.errorBox(e));
    }
  }
  const planView = (r) => out.upkeep.append(h("pre", {}, JSON.stringify(r, null, 2)));
  const upkeep = h("div", { class: "stack" },
    h("div", { class: "row" },
      h("button", { type: "button", id: "prune-plan", onclick: () => post("/api/context/prune", { dry_run: true }, planView) }, "Show prune plan"),
      h("button", { type: "button", class: "danger", id: "prune-apply", onclick: () => {
        if (confirm("Delete the event files older than context.retain_days?")) post("/api/context/prune", {}, planView);
      } }, "Prune now")),
    form("index-form", [pLabel, treePath,
      h("button", { type: "button", id: "index-symbols", onclick: () => post("/api/context/index-symbols", { path: treePath.value }, planView) }, "Index symbols")],
    "Index file tree", () => post("/api/context/index-tree", { path: treePath.value }, planView)),
    out.upkeep);

  const m = G.main();
  m.append(turns, workspaces,
    card("Query the store", form("query-form", [qLabel, q], "Run", runQuery),
      h("p", { class: "small muted" }, "The ", h("code", {}, "context query"), " language: ", h("code", {}, "<turn_id> [kind=…] [prov=…] [neigh=id] [explain=id] [path=a->b] [communities=1] [limit=N] keyword…"), "; ", h("code", {}, "*"), " is every turn."),
      out.query),
    card("Explain an entity", form("explain-form", [etLabel, eTurn, eiLabel, eId], "Explain", () => runExplain(eTurn.value, eId.value)), out.explain),
    card("Continuity", h("div", { class: "stack" }, h("div", { class: "row" }, wLabel, ws), h("div", { class: "row" }, tLabel, task,
      h("button", { type: "button", id: "show-record", onclick: showRecord }, "Show record"),
      h("button", { type: "button", class: "primary", id: "show-block", onclick: showBlock }, "Block a delegate would get")), out.continuity)),
    h("div", { class: "grid" },
      card("Communities", form("communities-form", [ctLabel, cTurn, algo], "Find", runCommunities), out.communities),
      card("Maintenance", upkeep)));

  async function suggestions() {
    try {
      const eps = await api("/api/context/episodes?limit=50");
      for (const e of eps.slice().reverse()) turns.append(h("option", { value: e.turn_id }, e.asked.slice(0, 80)));
      if (eps.length && !q.value) q.placeholder = eps[eps.length - 1].turn_id + " keyword…   ·   * parser OR lexer";
    } catch (e) { /* the query box works without suggestions */ }
    try {
      const w = await api("/api/continuity");
      for (const x of w.workspaces) workspaces.append(h("option", { value: x.workspace }, `${x.entries} entries`));
      if (w.workspaces.length) ws.value = w.workspaces[0].workspace;
    } catch (e) { /* typed by hand then */ }
  }
  G.header();
  suggestions();
})();
