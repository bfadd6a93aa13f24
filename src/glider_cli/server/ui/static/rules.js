// Rules: the rules in force in priority order with their hits, lint findings, the playground.
"use strict";

(() => {
  const { h, clear, fill, api, card, table } = G;

  const el = {
    config: h("div", { id: "config" }),
    rules: h("div", { id: "rules" }),
    findings: h("div", { id: "findings" }),
    explainOut: h("div", { id: "explain-result", "aria-live": "polite" }),
    parseOut: h("div", { id: "parse-result", "aria-live": "polite" }),
  };

  function hitsByRule(stats) {
    const out = new Map();
    for (const r of (stats && stats.rules) || []) out.set(r.rule, r.total);
    return out;
  }

  function stateCell(r) {
    if (r.shadowed) return [G.badge("shadowed", "warn"), " ", h("span", { class: "small" }, r.shadowed)];
    if (!r.enabled) return [G.badge("disabled", "off"), " ", h("span", { class: "small muted" }, r.disabled_reason || "")];
    return G.badge("on", "ok");
  }

  // A rule's local share, regret rate and estimated savings (GET /api/context/usage?by=rule).
  function usageCells(usage, name) {
    const u = usage && usage.get(name);
    if (!u) return ["–", "–", "–"];
    return [G.share(u.local_turn_share), G.share(u.regret_rate), G.money(u.savings)];
  }

  async function loadRules() {
    let data, hour = null, day = null, usage = null;
    try {
      [data, hour, day, usage] = await Promise.all([
        api("/api/router/rules"),
        api("/api/events/stats?window=hour").catch(() => null),
        api("/api/events/stats?window=day").catch(() => null),
        G.usageByRule(14).catch(() => null),
      ]);
    } catch (e) {
      fill(el.rules, G.errorBox(e));
      return;
    }
    const hh = hitsByRule(hour), dh = hitsByRule(day);
    fill(el.config, 
      h("p", {}, "Loaded from ", h("code", {}, data.source), data.profile ? [" (profile ", h("code", {}, data.profile), ")"] : "", ": ",
        h("strong", { id: "rules-in-force" }, `${data.in_force} rules in force`),
        data.rules.length > data.in_force ? ` (${data.rules.length - data.in_force} more disabled)` : "", "."),
      data.files.length > 1 ? h("p", { class: "small muted" }, "Files merged, base first: ", data.files.map((f, i) => [i ? ", " : "", h("code", {}, f)])) : null);
    const rows = data.rules.map((r) => [
      String(r.priority), h("strong", {}, r.name), r.kind,
      [G.side(r.target), " ", [r.backend, r.model].filter(Boolean).join(" · ")],
      String(hh.get(r.name) || 0), String(dh.get(r.name) || 0), ...usageCells(usage, r.name), stateCell(r), r.where ? h("code", { title: r.where }, r.where.split("/").pop()) : h("span", { class: "muted" }, "built in")]);
    const others = [...dh.keys()].filter((n) => !data.rules.some((r) => r.name === n));
    fill(el.rules, table(
      [{ label: "Priority", num: true }, { label: "Rule" }, { label: "Trigger" }, { label: "Sends to" },
        { label: "Hits 1 h", num: true }, { label: "Hits 24 h", num: true },
        { label: "Local share 14 d", num: true }, { label: "Regret 14 d", num: true }, { label: "Saved 14 d (est.)", num: true },
        { label: "State" }, { label: "Defined at" }],
      rows, { empty: "No rules.", caption: "Local share: the rule's turns served locally. Regret: the share of those the user did not accept (asked again, in the cloud or soon after; cut the answer off; an error the local model could not recover from). Saved: an estimate at the requested model's price." }),
      others.length ? h("p", { class: "small muted" }, "Also decided today (not a rule of the sequence): ",
        others.map((n, i) => [i ? ", " : "", h("code", {}, n), " ×" + dh.get(n)])) : null);
    const lint = data.lint;
    const items = [...lint.errors.map((i) => ["error", i]), ...lint.warnings.map((i) => ["warning", i])];
    fill(el.findings, items.length
      ? table([{ label: "Severity" }, { label: "Rule" }, { label: "Finding" }, { label: "Where" }],
        items.map(([sev, i]) => [G.badge(sev, sev), i.rule || "", h("span", { class: "wrap" }, i.message), i.file ? h("code", {}, i.file + (i.line ? ":" + i.line : "")) : ""]))
      : h("p", {}, G.badge("ok", "ok"), " No findings: every rule can run and every script loads."));
  }

  function explainBody(text, protocol) {
    const trimmed = text.trim();
    if (trimmed.startsWith("{")) {
      const obj = JSON.parse(trimmed);
      const out = { request: obj.request && typeof obj.request === "object" ? obj.request : obj };
      if (protocol) out.protocol = protocol;
      return out;
    }
    const request = { model: "glider-auto", max_tokens: 1024, messages: [{ role: "user", content: text }] };
    return { protocol: protocol || "anthropic", request };
  }

  function renderDecision(d) {
    const where = [d.backend, d.model].filter(Boolean).join(" · ");
    const trace = table([{ label: "Priority", num: true }, { label: "Rule" }, { label: "Matched" }, { label: "Reason" }],
      (d.trace || []).map((t) => [t.priority === null || t.priority === undefined ? "" : String(t.priority), t.rule,
        h("span", { class: t.matched ? "yes" : "no" }, t.matched ? "yes" : "no"), h("span", { class: "wrap" }, t.reason)]),
      { class: "trace" });
    const req = d.request || {};
    return h("div", { class: "stack", id: "explain-decision" },
      h("p", {}, "Goes ", G.side(d.target), " by rule ", h("strong", {}, d.rule), where ? " to " + where : "",
        d.delegate ? " (delegate " + d.delegate + ")" : "", "."),
      h("p", { class: "small muted" }, `About ${req.estimated_tokens} tokens · tools: ${req.has_tools ? "yes" : "no"} · complexity ${req.complexity_score} (${req.complexity_source}) · strategy ${d.strategy}`),
      trace);
  }

  function playground() {
    const text = h("textarea", { id: "explain-input", "aria-label": "Message or request body", placeholder: "fix the failing test in parser.py   — or paste a whole request body (JSON)" });
    const proto = h("select", { id: "explain-protocol", "aria-label": "Protocol" },
      h("option", { value: "" }, "protocol: guess"), h("option", { value: "anthropic" }, "anthropic"),
      h("option", { value: "openai_chat" }, "openai_chat"), h("option", { value: "openai_responses" }, "openai_responses"));
    const form = h("form", { id: "explain-form", class: "stack" },
      h("label", { class: "block", for: "explain-input" }, "A message, or a request body as a client sends it (Ctrl+Enter runs it)"),
      text, h("div", { class: "row" }, proto, h("button", { class: "primary", type: "submit" }, "Explain")));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clear(el.explainOut);
      let body;
      try {
        body = explainBody(text.value, proto.value);
      } catch (e) {
        el.explainOut.append(G.errorBox("not JSON: " + e.message));
        return;
      }
      try {
        el.explainOut.append(renderDecision(await api("/api/router/explain", { body })));
      } catch (e) {
        el.explainOut.append(G.errorBox(e));
      }
    });
    G.submitOnCtrlEnter(text, form);

    const src = h("textarea", { id: "parse-input", "aria-label": "Starlark script", placeholder: 'def evaluate(request):\n    if "refactor" in request.messages[-1].content:\n        return {"matched": True, "action": {"target": "local"}}' });
    const pform = h("form", { id: "parse-form", class: "stack" },
      h("label", { class: "block", for: "parse-input" }, "A script rule: errors are reported at line:column"),
      src, h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Check script")));
    pform.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clear(el.parseOut);
      try {
        const r = await api("/api/playground/parse", { body: { source: src.value } });
        el.parseOut.append(r.ok
          ? h("p", {}, G.badge("ok", "ok"), " No errors.")
          : h("ul", { class: "list" }, r.errors.map((e) => h("li", {}, h("code", {}, `${e.line}:${e.column}`), " ", e.message))));
      } catch (e) {
        el.parseOut.append(G.errorBox(e));
      }
    });
    G.submitOnCtrlEnter(src, pform);
    return h("div", { class: "grid", id: "playground" },
      card("Playground: route explain", form, el.explainOut),
      card("Playground: Starlark check", pform, el.parseOut));
  }

  G.main().append(card("Configuration", el.config), card("Rules in force, by priority", el.rules), card("Lint findings", el.findings), playground());
  G.header();
  loadRules();
  // The editor (rules_edit.js) refreshes the table after a save.
  G.reloadRules = loadRules;
  document.head.append(h("script", { src: "/ui/static/rules_edit.js", defer: true }));
  if (location.hash === "#playground") document.getElementById("explain-input").focus();
})();
