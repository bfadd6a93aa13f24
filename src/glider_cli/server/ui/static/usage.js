// Glider dashboard: usage and savings (GET /api/context/usage), shared by the Overview and Rules pages.
//   G.usagePanel(days)    a card: tiles (cloud spend, estimated savings, local share, the tokens the
//                         local side consumed and the cloud tokens it saved, apart) and a chart of
//                         cloud spend and estimated savings per day
//   G.usageByRule(days)   Map rule -> that rule's usage row (local share, regret rate, savings)
"use strict";

(() => {
  const { h, s, fill, api, card } = G;

  function money(v) {
    if (v === null || v === undefined) return "–";
    return "$" + (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 0.01 || v === 0 ? v.toFixed(2) : v.toFixed(4));
  }
  function share(v) {
    return v === null || v === undefined ? "–" : Math.round(v * 100) + "%";
  }
  G.money = money;
  G.share = share;

  // Paired bars per day: cloud spend and estimated savings (dollars), the same scale.
  G.usageChart = function usageChart(daily) {
    const W = 1100, H = 210, left = 52, bottom = 22, top = 10;
    const max = Math.max(0.01, ...daily.map((d) => Math.max(d.cloud_cost, d.savings)));
    const plotH = H - bottom - top;
    const bw = (W - left - 6) / Math.max(daily.length, 1);
    const spend = daily.reduce((n, d) => n + d.cloud_cost, 0), saved = daily.reduce((n, d) => n + d.savings, 0);
    const svg = s("svg", {
      class: "chart", id: "usage-chart", viewBox: `0 0 ${W} ${H}`, role: "img",
      "aria-label": `Cloud spend ${money(spend)} and estimated savings ${money(saved)} over ${daily.length} days`,
    });
    for (const v of [0, max / 2, max]) {
      const y = top + plotH - (v / max) * plotH;
      svg.append(s("line", { class: "axis", x1: left, x2: W - 4, y1: y, y2: y }));
      svg.append(s("text", { x: left - 6, y: y + 4, "text-anchor": "end" }, money(v)));
    }
    daily.forEach((d, i) => {
      const x = left + i * bw + 1.5;
      const w = Math.max((bw - 4) / 2, 1);
      const hc = (d.cloud_cost / max) * plotH, hs = (Math.max(d.savings, 0) / max) * plotH;
      const g = s("g", { class: "usage-day", "data-day": d.day },
        s("title", {}, `${d.day}: cloud ${money(d.cloud_cost)}, estimated savings ${money(d.savings)}`));
      if (hc) g.append(s("rect", { class: "bar-cloud", x, width: w, y: top + plotH - hc, height: hc }));
      if (hs) g.append(s("rect", { class: "bar-local", x: x + w + 1, width: w, y: top + plotH - hs, height: hs }));
      svg.append(g);
      const every = Math.ceil(daily.length / 14);
      if (i % every === 0) svg.append(s("text", { x: x + w, y: H - 6, "text-anchor": "middle" }, d.day.slice(5)));
    });
    const legend = h("div", { class: "legend" }, h("span", { class: "cloud" }, "cloud spend"),
      h("span", { class: "local" }, "estimated savings (local answers at the requested model's price)"));
    return h("div", {}, svg, legend);
  };

  function tile(value, label, cls) {
    return h("div", { class: "tile " + (cls || "") }, h("div", { class: "n" }, value), h("div", { class: "l" }, label));
  }

  G.usagePanel = function usagePanel(days) {
    const body = h("div", { id: "usage" }, h("p", { class: "muted" }, "Loading…"));
    const panel = card("Usage and savings, last " + days + " days", body);
    panel.id = "usage-panel";
    api("/api/context/usage?by=day&days=" + days).then((u) => {
      const t = u.totals;
      if (!t.calls) {
        fill(body, h("p", { class: "muted" }, "No served requests in the last " + days + " days."));
        return;
      }
      fill(body,
        h("div", { class: "tiles", id: "usage-tiles" },
          tile(money(t.cloud_cost), "cloud spend", "cloud"),
          tile(money(t.savings), "saved (estimate)", "local"),
          tile(share(t.local_turn_share), "turns served locally", "local"),
          tile(share(t.local_token_share), "tokens served locally", "local"),
          tile(t.tokens.local.toLocaleString("en-US"), "local tokens read and written", "local"),
          tile(t.avoided_cloud_tokens.toLocaleString("en-US"), "cloud tokens saved (estimate)", "local"),
          tile(share(t.regret_rate), "local turns regretted")),
        G.usageChart(u.daily),
        h("p", { class: "muted small" },
          "Savings are estimates: what the cloud requests the local answers saved (the client's whole request and the answer) would have cost on the model the client asked for; the local models read only the smaller packs. ",
          `Prices: the bundled table of ${u.prices.date}` + (u.prices.configured.length ? " with your pricing: entries" : "") + ".",
          t.estimated_calls ? ` ${t.estimated_calls} calls had their tokens estimated (the backend reported none).` : "",
          u.unpriced.length ? " No price for: " + u.unpriced.join(", ") + " (counted as $0)." : ""));
    }).catch((e) => fill(body, G.errorBox(e)));
    return panel;
  };

  G.usageByRule = async function usageByRule(days) {
    const u = await api("/api/context/usage?by=rule&days=" + days);
    return new Map(u.rows.map((r) => [r.key, r]));
  };
})();
