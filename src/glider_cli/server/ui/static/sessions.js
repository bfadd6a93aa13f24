// Sessions: each session's turn families, every request with its kind, side and sticky state.
// A follow-on that went to another side than its family's new turn is marked: that is a misroute
// to look at (or a tool result going home, which the Notes column then says).
"use strict";

(() => {
  const { h, clear, fill, api, card, table } = G;
  const NONE = "(no session id)";
  const state = { next: null, selected: null, reqNext: null, requests: [] };
  const el = {
    list: h("ul", { class: "list", id: "session-list" }),
    more: h("button", { type: "button", id: "more-sessions", hidden: true }, "Older sessions"),
    detail: h("div", { id: "session-detail" }),
  };

  function sessionKey(s) {
    return s === null || s === undefined ? "" : s;
  }

  function sessionButton(s) {
    const key = sessionKey(s.session_id);
    const b = h("button", { type: "button", "data-session": key, "aria-current": String(state.selected === key) },
      h("div", {}, h("strong", {}, s.session_id ? G.short(s.session_id, 12) : NONE), " ", h("span", { class: "muted small" }, s.client || "")),
      h("div", { class: "small" }, G.when(s.last_ts), " · ", `${s.requests} request${s.requests === 1 ? "" : "s"}, ${s.turns} turn${s.turns === 1 ? "" : "s"} · `,
        h("span", { class: "badge local" }, String(s.local)), " ", h("span", { class: "badge cloud" }, String(s.cloud))),
      s.ask ? h("div", { class: "small muted clip" }, s.ask) : null);
    b.addEventListener("click", () => select(key));
    return h("li", {}, b);
  }

  async function loadSessions(before) {
    let page;
    try {
      page = await api("/api/events/sessions?limit=30" + (before ? "&before=" + encodeURIComponent(before) : ""));
    } catch (e) {
      el.list.append(h("li", {}, G.errorBox(e)));
      return;
    }
    for (const s of page.sessions) el.list.append(sessionButton(s));
    state.next = page.next;
    el.more.hidden = !page.next;
    if (!before && !page.sessions.length) {
      el.list.append(h("li", { class: "empty" }, "No sessions yet. Requests sent through Glider are grouped here by the client's session id."));
    }
    const want = decodeURIComponent((location.hash.match(/session=([^&]*)/) || [])[1] || "");
    if (!before && page.sessions.length) select(location.hash.includes("session=") ? want : sessionKey(page.sessions[0].session_id), false);
  }

  function families(requests) {
    const byTurn = new Map();
    for (const r of requests.slice().reverse()) {
      const k = r.turn_id || "(no turn)";
      if (!byTurn.has(k)) byTurn.set(k, []);
      byTurn.get(k).push(r);
    }
    return [...byTurn.entries()].reverse();
  }

  function notes(r, home) {
    const out = r.reason ? [r.reason] : [];
    if (r.forced) out.push("sent by the turn index (tool result home, or following its parent)");
    if (r.sticky) out.push("sticky: " + (r.sticky_reason || "bound"));
    if (r.escalated) out.push("escalated from " + (r.fallback_from || "local") + ": " + r.escalated);
    else if (r.fallback_from) out.push("fallback from " + r.fallback_from);
    if (r.failures) out.push(r.failures + " failed attempt(s)" + (r.error ? ": " + r.error : ""));
    if (home && r.kind !== "new_turn" && r.side !== home && !r.forced) out.push("left the family's side (" + home + ")");
    return out.join("; ");
  }

  function renderDetail() {
    clear(el.detail);
    const key = state.selected;
    el.detail.append(h("h2", {}, key ? "Session " + key : NONE));
    if (!state.requests.length) {
      el.detail.append(h("p", { class: "muted" }, "No requests kept for this session."));
      return;
    }
    const cols = [{ label: "Time" }, { label: "Kind" }, { label: "Side" }, { label: "Rule" }, { label: "Backend · model" },
      { label: "Status" }, { label: "Latency", num: true }, { label: "Why" }];
    for (const [turn, reqs] of families(state.requests)) {
      const opener = reqs.find((r) => r.kind === "new_turn");
      const home = opener ? opener.side : null;
      const rows = reqs.map((r) => [G.time(r.ts), G.kind(r.kind), G.side(r.side), r.rule,
        [r.answered_by || r.backend, r.answered_model || r.model].filter(Boolean).join(" · "), G.status(r.status, r.outcome), G.ms(r.ms), notes(r, home)]);
      const t = table(cols, rows);
      reqs.forEach((r, i) => {
        if (home && r.kind !== "new_turn" && r.side !== home && !r.forced) t.querySelectorAll("tbody tr")[i].classList.add("warn");
      });
      el.detail.append(h("section", { class: "family", "aria-label": "Turn family " + turn },
        h("h3", {}, opener && opener.ask ? ["“", opener.ask, "”"] : h("span", { class: "muted" }, "(a family without its opening message)"),
          " ", h("span", { class: "muted small mono" }, "turn " + G.short(turn, 12))),
        t));
    }
    if (state.reqNext) {
      el.detail.append(h("button", { type: "button", id: "more-requests", onclick: () => loadRequests(true) }, "Older requests of this session"));
    }
  }

  async function loadRequests(more) {
    const key = state.selected;
    let q = "/api/events/requests?limit=200";
    if (key) q += "&session=" + encodeURIComponent(key);
    if (more && state.reqNext) q += "&before=" + encodeURIComponent(state.reqNext);
    let page;
    try {
      page = await api(q);
    } catch (e) {
      fill(el.detail, G.errorBox(e));
      return;
    }
    // Without a session id the API cannot filter: keep the requests that have none.
    const got = key ? page.requests : page.requests.filter((r) => !r.session_id);
    state.requests = more ? state.requests.concat(got) : got;
    state.reqNext = page.next;
    renderDetail();
  }

  function select(key, push = true) {
    state.selected = key;
    for (const b of el.list.querySelectorAll("[data-session]")) b.setAttribute("aria-current", String(b.dataset.session === key));
    if (push) history.replaceState(null, "", "#session=" + encodeURIComponent(key));
    state.reqNext = null;
    loadRequests(false);
  }

  G.add(el.detail, [h("h2", {}, "Turn families"),
    h("p", { class: "muted" }, "Each session's turn families show here: one real user message and every request a client sends on its behalf, ",
      "each with its kind (new turn, tool result, title, subagent, summary), the side it went to and the sticky state. ",
      "A follow-on that left its family's side is marked.")]);
  el.more.addEventListener("click", () => loadSessions(state.next));
  G.main().append(h("div", { class: "split" },
    card("Sessions, latest first", el.list, h("div", { class: "row" }, el.more)),
    h("section", { class: "card", "aria-label": "Session detail" }, el.detail)));
  G.header();
  loadSessions(null);
})();
