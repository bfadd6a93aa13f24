// Overview: where did my last requests go, and why? Live decisions, counts, backends, episodes.
"use strict";

(() => {
  const { h, clear, fill, api, card, table, tableRow } = G;
  const MAX_ROWS = 60;
  const state = { window: "hour", rows: new Map(), open: new Map(), newest: null, healthz: null, stats: null };
  const PROBE_POLL_MS = 700;  // while the first probe of the local backends is in flight
  let probeTimer = null;

  const el = {
    start: h("div", { id: "getting-started" }),
    tiles: h("div", { class: "tiles", id: "tiles" }),
    chart: h("div", { id: "chart" }),
    rules: h("div", { id: "rule-counts" }),
    live: h("tbody", { id: "live-rows" }),
    liveState: h("span", { class: "live", id: "live-state" }, "connecting"),
    backends: h("div", { id: "backends" }),
    episodes: h("div", { id: "episodes" }),
  };
  const LIVE_COLS = [
    { label: "Time" }, { label: "Side" }, { label: "Rule" }, { label: "Backend · model" },
    { label: "Kind" }, { label: "Status" }, { label: "Latency", num: true }, { label: "Why" },
  ];

  function windowButtons() {
    const mk = (name, text) => h("button", {
      type: "button", "aria-pressed": String(state.window === name), "data-window": name,
      onclick: () => {
        state.window = name;
        for (const b of document.querySelectorAll("[data-window]")) b.setAttribute("aria-pressed", String(b.dataset.window === name));
        refreshStats();
      },
    }, text);
    return h("span", { class: "row", role: "group", "aria-label": "Time window" }, mk("hour", "Last hour"), mk("day", "Last day"));
  }

  function layout() {
    const m = G.main();
    const liveTable = h("div", { class: "scroll" }, h("table", { id: "live-table" },
      h("thead", {}, h("tr", {}, LIVE_COLS.map((c) => h("th", { class: c.num ? "num" : null, scope: "col" }, c.label)))), el.live));
    m.append(
      el.start,
      card(["Live decisions ", el.liveState], liveTable),
      h("div", { class: "grid" },
        card(["Requests ", h("span", { class: "grow" }), windowButtons()], el.tiles, el.chart),
        card("Per rule", el.rules)),
      // The whole width: ten columns do not fit half of it (the Breaker column was cut at 1,400 px).
      card("Backends", el.backends),
      G.usagePanel(14),
      card("Recent episodes", el.episodes),
    );
  }

  function notes(r) {
    const out = r.reason ? [r.reason] : [];
    if (r.escalated) out.push("escalated from " + (r.fallback_from || "local") + ": " + r.escalated);
    else if (r.fallback_from) out.push("fallback from " + r.fallback_from);
    else if (r.fallbacks) out.push("fallback");
    if (r.failures) out.push(r.failures + " failed attempt" + (r.failures > 1 ? "s" : "") + (r.error ? ": " + r.error : ""));
    if (r.forced) out.push("forced by the turn index");
    else if (r.sticky) out.push("sticky: " + (r.sticky_reason || "bound"));
    return out.join("; ");
  }

  function rowCells(r) {
    const where = [r.answered_by || r.backend, r.answered_model || r.model].filter(Boolean).join(" · ");
    return [G.time(r.ts), G.side(r.side), r.rule, where, G.kind(r.kind), G.status(r.status, r.outcome), G.ms(r.ms), notes(r)];
  }

  function render(r, fresh) {
    const tr = tableRow(LIVE_COLS, rowCells(r), { "data-id": r.id, class: fresh ? "fresh" : null });
    const old = state.rows.get(r.id);
    if (old && old.tr.isConnected) old.tr.replaceWith(tr);
    state.rows.set(r.id, { r, tr });
    return tr;
  }

  function addRequest(r, fresh) {
    if (state.rows.has(r.id)) return;
    const waiting = document.getElementById("live-empty");
    if (waiting) waiting.remove();
    const tr = render(r, fresh);
    el.live.prepend(tr);
    if (r.status === null) {
      const q = state.open.get(r.turn_id) || [];
      q.push(r);
      state.open.set(r.turn_id, q);
    }
    while (el.live.children.length > MAX_ROWS) {
      const last = el.live.lastElementChild;
      state.rows.delete(last.dataset.id);
      last.remove();
    }
    if (!state.newest || r.id > state.newest) state.newest = r.id;
    el.start.hidden = true;
  }

  function firstOpen(turn) {
    const q = state.open.get(turn);
    return q && q.length ? q[0] : null;
  }

  function onEvent(ev) {
    const t = ev.type;
    if (t === "RouteDecided") {
      addRequest(G.requestOf(ev), true);
    } else if (t === "FulfilledLocal" || t === "OriginPassthrough") {
      const r = firstOpen(ev.turn_id);
      if (!r) return;
      state.open.get(ev.turn_id).shift();
      const d = ev.data || {};
      Object.assign(r, { status: d.status ?? 0, ms: d.ms ?? null, answered_by: d.backend || null,
        answered_model: d.model || null, fallback_from: d.fallback_from || null, escalated: d.escalated || null, outcome: d.outcome || null, error: r.error || d.error || null });
      render(r, true);
      statsSoon();
      episodesSoon();
    } else if (t === "UpstreamFailed" || t === "FallbackUsed") {
      const r = firstOpen(ev.turn_id);
      if (!r) return;
      if (t === "FallbackUsed") r.fallbacks += 1;
      else { r.failures += 1; r.error = (ev.data && ev.data.error) || r.error; }
      render(r, true);
    } else if (t === "TurnOpened") {
      episodesSoon();
    } else if (t === "BackendOpened" || t === "BackendClosed") {
      statsSoon();  // the Backends panel reads the breakers from /healthz again
    }
  }

  // The server ends each stream after a few seconds and the browser reconnects at once, resuming
  // after the last event it saw (Last-Event-ID): "reconnecting" shows only if that takes a while.
  function connect() {
    const q = state.newest ? "?after=" + encodeURIComponent(state.newest) : "?backlog=0";
    const es = new EventSource("/api/events/stream" + q);
    let slow = null;
    es.onopen = () => {
      clearTimeout(slow);
      el.liveState.className = "live on";
      el.liveState.textContent = "live";
    };
    es.onerror = () => {
      clearTimeout(slow);
      if (es.readyState === EventSource.CLOSED) {
        // Refused (a 401, say): the browser gives up on it; try again a little later.
        el.liveState.className = "live off";
        el.liveState.textContent = "not connected";
        setTimeout(connect, 10000);
        return;
      }
      slow = setTimeout(() => {
        el.liveState.className = "live off";
        el.liveState.textContent = "reconnecting";
      }, 2500);
    };
    es.onmessage = (m) => {
      try { onEvent(JSON.parse(m.data)); } catch (e) { /* a frame we cannot read is skipped */ }
    };
  }

  function tile(n, label, cls) {
    return h("div", { class: "tile " + (cls || "") }, h("div", { class: "n" }, n === null || n === undefined ? "–" : String(n)), h("div", { class: "l" }, label));
  }

  async function refreshStats() {
    let st;
    try {
      st = await api("/api/events/stats?window=" + state.window);
    } catch (e) {
      fill(el.tiles, G.errorBox(e));
      return;
    }
    fill(el.tiles, 
      tile(st.total, "requests"), tile(st.sides.local, "local", "local"), tile(st.sides.cloud, "cloud", "cloud"),
      tile(st.fallbacks, "fallbacks"), tile(st.failures, "failed attempts"), tile(st.p50_ms === null ? null : G.ms(st.p50_ms), "median latency"));
    fill(el.chart, G.sideChart(st.series, st.bucket_ms));
    if (st.covered_from) el.chart.append(h("p", { class: "muted small" }, "Counts cover the requests since " + G.when(st.covered_from) + "."));
    fill(el.rules, table(
      [{ label: "Rule" }, { label: "Local", num: true }, { label: "Cloud", num: true }, { label: "Total", num: true }],
      st.rules.map((r) => [r.rule, r.local, r.cloud, r.total]),
      { empty: "No requests in this window." }));
    try {
      state.healthz = await api("/healthz");  // the breakers change while the page is open
    } catch (e) { /* keep the last one */ }
    state.stats = st.backends;
    renderBackends(st.backends);
    followProbe();
    if (st.total === 0 && !state.rows.size) showGettingStarted();
  }
  const statsSoon = G.debounce(refreshStats, 800);

  // `glider serve` listens before the first probe of its local backends has answered: while /healthz
  // says `probing`, read it again every PROBE_POLL_MS until the probe is over, so the panel shows what
  // the probe found without a reload. Never runs while `probing` is false (no polling in steady state).
  function followProbe() {
    if (probeTimer !== null || !(state.healthz && state.healthz.probing)) return;
    probeTimer = setTimeout(async () => {
      let ok = true;
      try {
        state.healthz = await api("/healthz");
      } catch (e) {
        ok = false;  // not answering: stop here; the periodic refresh reads /healthz again
      }
      probeTimer = null;
      if (state.stats) renderBackends(state.stats);
      if (ok) followProbe();
    }, PROBE_POLL_MS);
  }

  function renderBackends(stats) {
    const list = (state.healthz && state.healthz.backends) || [];
    const probed = new Map(((state.healthz && state.healthz.local) || []).map((c) => [c.backend, c]));
    const probing = !!(state.healthz && state.healthz.probing);
    const probeText = (c) => {
      if (!c) return "";
      if (c.reachable === false) return "unreachable: " + (c.error || "");
      if (probing && c.reachable === null) {
        // The first probe has not answered yet: what the config says, and no "unknown".
        const known = [c.context_window ? c.context_window.toLocaleString() + " tokens" : null,
          c.tools === true ? "tools" : c.tools === false ? "no tools" : null].filter(Boolean);
        return ["probing…"].concat(known).join("; ");
      }
      const window = c.context_window ? c.context_window.toLocaleString() + " tokens" : "window unknown";
      const tools = c.tools === true ? "tools" : c.tools === false ? "no tools" : "tools unknown";
      const models = c.models && c.models.length ? c.models.join(", ") : "models unknown";
      return `${models}; ${window}; ${tools}` + (c.error ? "; " + c.error : "");
    };
    // The circuit breaker (`backends.breaker`): an open one sends requests to the fallback.
    const breakerCell = (br) => {
      if (!br) return G.badge("off", "off");
      if (br.state === "closed") return G.badge("closed", "ok");
      const why = br.last_error ? " · " + br.last_error : "";
      if (br.state === "open") return h("span", {}, G.badge("open", "bad"), " retry in " + Math.ceil(br.retry_in) + " s" + why);
      return h("span", {}, G.badge("half-open", "warn"), " next request tries it" + why);
    };
    const rows = list.map((b) => {
      const s = stats[b.name] || null;
      const stateName = s ? s.state : "idle";
      const key = b.type === "origin" ? "client's own" : b.api_key_env ? (b.api_key_set ? b.api_key_env + " set" : b.api_key_env + " not set") : "none needed";
      const last = s && s.last_status !== null && s.last_status !== undefined ? G.status(s.last_status) : s && s.last_error ? s.last_error : "";
      const probe = probeText(probed.get(b.name));
      const name = probe ? h("div", {}, h("strong", {}, b.name), h("div", { class: "muted" }, probe)) : h("strong", {}, b.name);
      return [name, G.side(b.side), b.type, b.model || "", key, G.badge(stateName, stateName), breakerCell(b.breaker),
        s ? `${s.ok}/${s.answered}` : "0/0", s ? G.ms(s.p50_ms) : "", last];
    });
    fill(el.backends, table(
      [{ label: "Name" }, { label: "Side" }, { label: "Type" }, { label: "Model" }, { label: "Key" }, { label: "Health" },
        { label: "Breaker" }, { label: "OK/answered", num: true }, { label: "p50", num: true }, { label: "Last" }],
      rows, { empty: "No backends configured.", caption: "Health from the requests of the selected window; under a local backend's name, what its server says it serves (probed at start, and again when a failed one comes back)." }));
  }

  async function refreshEpisodes() {
    let eps;
    try {
      eps = await api("/api/context/episodes?limit=8");
    } catch (e) {
      fill(el.episodes, G.errorBox(e));
      return;
    }
    // A turn's row is its main request's decision and outcome; its title and other side requests are
    // listed under the outcome, never in its place.
    const sideList = (e) => {
      const items = (e.side_requests || []).map((s) =>
        h("li", {}, `${s.kind}: ` + [s.routed, s.outcome].filter(Boolean).join(" → ")));
      return items.length ? h("ul", { class: "side-requests muted small" }, items) : null;
    };
    const rows = eps.slice().reverse().map((e) => [G.when(e.last_ts), h("span", { class: "wrap" }, e.asked || "(no text)"),
      e.routed, h("div", {}, e.outcome, sideList(e))]);
    fill(el.episodes, table([{ label: "When" }, { label: "Asked" }, { label: "Routed" }, { label: "Outcome" }], rows,
      { empty: "No episodes yet: each user turn becomes one." }));
  }
  const episodesSoon = G.debounce(refreshEpisodes, 800);

  function showGettingStarted() {
    const o = location.origin;
    fill(el.start, h("section", { class: "empty card", "aria-label": "Getting started" },
      h("h2", {}, "No requests yet"),
      h("p", {}, "Glider is running and waiting. Send a coding agent's requests through it:"),
      h("ol", {},
        h("li", {}, "Claude Code: ", h("code", {}, `ANTHROPIC_BASE_URL=${o} claude`)),
        h("li", {}, "OpenAI-compatible clients (Codex, SDKs): ", h("code", {}, `OPENAI_BASE_URL=${o}/v1`)),
        h("li", {}, "Try a routing decision without sending anything: the playground on ", h("a", { href: "/ui/rules#playground" }, "Rules"), ", or ", h("code", {}, 'glider route explain "fix the failing test"'), ".")),
      h("p", { class: "muted small" }, "Decisions appear below as they happen.")));
    el.start.hidden = false;
  }

  async function start() {
    layout();
    state.healthz = await G.header();
    followProbe();
    try {
      const page = await api("/api/events/requests?limit=25");
      for (const r of page.requests.slice().reverse()) addRequest(r, false);
    } catch (e) {
      el.live.append(h("tr", {}, h("td", { colspan: LIVE_COLS.length }, G.errorBox(e))));
    }
    if (!state.rows.size) {
      el.live.append(h("tr", { id: "live-empty" }, h("td", { colspan: LIVE_COLS.length, class: "muted" }, "Waiting for the first request…")));
    }
    connect();
    refreshStats();
    refreshEpisodes();
    setInterval(refreshStats, 15000);
  }

  start();
})();
