// Glider dashboard: shared helpers. Every value from the server reaches the page through
// textContent or a DOM attribute, never as HTML: a message containing <script> shows as text.
"use strict";

const G = (() => {
  const SVG_NS = "http://www.w3.org/2000/svg";

  function add(node, kids) {
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }

  function setAttrs(node, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.setAttribute("class", v);
      else if (k === "text") node.textContent = String(v);
      else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    return node;
  }

  // h("td", {class: "num"}, "text", otherNode): an element; strings become text nodes.
  function h(tag, attrs, ...kids) {
    return add(setAttrs(document.createElement(tag), attrs), kids);
  }

  function s(tag, attrs, ...kids) {
    return add(setAttrs(document.createElementNS(SVG_NS, tag), attrs), kids);
  }

  function clear(node) {
    while (node.firstChild) node.firstChild.remove();
    return node;
  }

  // Replace a node's content; null, undefined and false children are skipped.
  function fill(node, ...kids) {
    return add(clear(node), kids);
  }

  class ApiError extends Error {
    constructor(status, message, body) {
      super(message);
      this.status = status;
      this.body = body;
    }
  }

  const TOKEN_HELP = () => [
    "This Glider server has a GLIDER_TOKEN. Open ",
    h("code", {}, location.origin + location.pathname + "?token=<GLIDER_TOKEN>"),
    " once (the value of GLIDER_TOKEN where glider serve runs); the browser then keeps it in a cookie.",
  ];

  // fetch JSON from this origin. body -> POST with a JSON body. Errors throw ApiError.
  async function api(path, opts = {}) {
    const init = { credentials: "same-origin", headers: { accept: "application/json" } };
    if (opts.body !== undefined) {
      init.method = "POST";
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(opts.body);
    }
    let r;
    try {
      r = await fetch(path, init);
    } catch (e) {
      notice("bad", "Glider is not answering (", String(e.message || e), "). Is glider serve still running?");
      throw new ApiError(0, "glider is not answering", null);
    }
    let data = null;
    const text = await r.text();
    if (text) {
      try { data = JSON.parse(text); } catch (e) { data = text; }
    }
    if (r.status === 401) notice("warn", ...TOKEN_HELP());
    if (!r.ok) {
      const err = data && data.error;
      const msg = (err && (err.message || err)) || ("HTTP " + r.status);
      throw new ApiError(r.status, String(msg), data);
    }
    return data;
  }

  function notice(kind, ...kids) {
    const n = document.getElementById("notice");
    n.className = kind === "bad" ? "bad" : "";
    clear(n);
    add(n, kids);
    n.hidden = false;
  }

  function errorBox(err) {
    return h("p", { class: "badge bad", role: "alert" }, String(err && err.message ? err.message : err));
  }

  const pad = (n) => String(n).padStart(2, "0");
  function time(ts) {
    if (!ts) return "";
    const d = new Date(ts);
    if (isNaN(d)) return String(ts);
    return pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }
  function when(ts) {
    if (!ts) return "";
    const d = new Date(ts);
    if (isNaN(d)) return String(ts);
    const today = new Date();
    const day = d.toDateString() === today.toDateString() ? "" : d.toLocaleDateString() + " ";
    return day + time(ts);
  }
  function ms(v) {
    if (v === null || v === undefined) return "";
    return v >= 10000 ? (v / 1000).toFixed(1) + " s" : Math.round(v) + " ms";
  }
  function short(id, n = 8) {
    if (!id) return "";
    return String(id).length > n + 2 ? String(id).slice(0, n) + "…" : String(id);
  }

  function badge(text, kind) {
    return h("span", { class: "badge " + (kind || text) }, text);
  }
  function side(v) {
    return badge(v === "local" ? "local" : "cloud", v === "local" ? "local" : "cloud");
  }
  const KIND_NAMES = {
    new_turn: "new turn", tool_result: "tool result", title: "title", subagent: "subagent",
    summary: "summary", retry: "retry", continuation: "continuation",
  };
  function kind(v) {
    return badge(KIND_NAMES[v] || v || "?", "kind");
  }
  // A reply's status; `outcome` (cut, failed, refused) when it did not end well, shown with it.
  function status(v, outcome) {
    if (v === null || v === undefined) return h("span", { class: "muted" }, "…");
    if (outcome) return badge(outcome + " " + v, "bad");
    return badge(String(v), v > 0 && v < 400 ? "ok" : "bad");
  }

  // A table: columns [{label, num?}], rows of cells (node, string or [nodes]).
  function table(columns, rows, opts = {}) {
    const head = h("tr", {}, columns.map((c) => h("th", { class: c.num ? "num" : null, scope: "col" }, c.label)));
    const body = h("tbody", {});
    for (const row of rows) body.append(tableRow(columns, row));
    const t = h("table", { class: opts.class || null }, opts.caption ? h("caption", { class: "muted small" }, opts.caption) : null, h("thead", {}, head), body);
    if (!rows.length && opts.empty) body.append(h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, opts.empty)));
    return h("div", { class: "scroll" }, t);
  }
  function tableRow(columns, row, attrs) {
    return h("tr", attrs || {}, row.map((cell, i) => h("td", { class: columns[i] && columns[i].num ? "num" : columns[i] && columns[i].cls || null }, cell)));
  }

  function card(title, ...kids) {
    return h("section", { class: "card", "aria-label": typeof title === "string" ? title : null }, h("h2", {}, title), ...kids);
  }

  function main() {
    return document.getElementById("main");
  }

  // The four pages share the header: mark the current one, show what /healthz says.
  async function header() {
    const page = document.body.dataset.page;
    for (const a of document.querySelectorAll("[data-nav]")) {
      if (a.dataset.nav === page) a.setAttribute("aria-current", "page");
    }
    try {
      const hz = await api("/healthz");
      const info = document.getElementById("server-info");
      info.textContent = ["glider " + hz.version, hz.profile ? "profile " + hz.profile : null, hz.config].filter(Boolean).join(" · ");
      return hz;
    } catch (e) {
      return null;
    }
  }

  // Ctrl/Cmd+Enter in a textarea submits its form.
  function submitOnCtrlEnter(textarea, form) {
    textarea.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        form.requestSubmit();
      }
    });
  }

  function debounce(fn, wait) {
    let t = null;
    return (...args) => {
      clearTimeout(t);
      t = setTimeout(() => fn(...args), wait);
    };
  }

  // The trace line that decided: the rule's own matched line, else the last match (store/views/feed.py).
  function why(trace, rule) {
    const matched = (trace || []).filter((t) => t && t.matched);
    const own = matched.filter((t) => t.rule === rule);
    const line = (own.length ? own : matched).slice(-1)[0];
    return line ? line.reason || null : null;
  }

  // The same record as store/views/feed.py makes of a RouteDecided event.
  function requestOf(ev) {
    const d = ev.data || {};
    const fam = d.family || {};
    const st = d.sticky || {};
    return {
      id: ev.id, ts: ev.ts, turn_id: ev.turn_id, session_id: fam.session_id || null,
      kind: fam.kind || "unknown", side: d.target === "local" ? "local" : "cloud", rule: d.rule || "?",
      backend: d.backend || null, model: d.model || null, sticky: !!st.bound,
      sticky_reason: st.reason || null, forced: d.rule === "sticky", reason: d.refused || why(d.trace, d.rule),
      status: null, ms: null, answered_by: null, answered_model: null, fallback_from: null, escalated: null, failures: 0, fallbacks: 0, error: null,
      outcome: null,
    };
  }

  return {
    h, s, clear, fill, add, api, ApiError, notice, errorBox, time, when, ms, short, badge, side, kind,
    status, table, tableRow, card, main, header, submitOnCtrlEnter, debounce, requestOf, KIND_NAMES,
  };
})();
