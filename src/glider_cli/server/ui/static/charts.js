// Glider dashboard: two small SVG pictures, drawn by hand (no library).
//   G.sideChart(series, bucketMs)  stacked bars of requests per side over time
//   G.neighbourGraph(explain, onPick)  an entity in the middle, its neighbours around it
"use strict";

(() => {
  const { s, h } = G;

  function clock(t) {
    const d = new Date(t);
    return String(d.getHours()).padStart(2, "0") + ":" + String(d.getMinutes()).padStart(2, "0");
  }

  G.sideChart = function sideChart(series, bucketMs) {
    const W = 640, H = 170, left = 34, bottom = 22, top = 8;
    const max = Math.max(1, ...series.map((b) => b.local + b.cloud));
    const plotH = H - bottom - top;
    const bw = (W - left - 6) / Math.max(series.length, 1);
    const svg = s("svg", {
      class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img",
      "aria-label": "Requests per side over time: " + series.reduce((n, b) => n + b.local + b.cloud, 0) + " in all",
    });
    const ticks = max <= 4 ? [...Array(max + 1).keys()] : [0, Math.round(max / 2), max];
    for (const v of ticks) {
      const y = top + plotH - (v / max) * plotH;
      svg.append(s("line", { class: "axis", x1: left, x2: W - 4, y1: y, y2: y }));
      svg.append(s("text", { x: left - 6, y: y + 4, "text-anchor": "end" }, String(v)));
    }
    series.forEach((b, i) => {
      const x = left + i * bw + 1.5;
      const w = Math.max(bw - 3, 1);
      const hl = (b.local / max) * plotH;
      const hc = (b.cloud / max) * plotH;
      const g = s("g", {}, s("title", {}, `${clock(b.t)}–${clock(b.t + bucketMs)}: ${b.local} local, ${b.cloud} cloud`));
      if (b.local) g.append(s("rect", { class: "bar-local", x, width: w, y: top + plotH - hl, height: hl }));
      if (b.cloud) g.append(s("rect", { class: "bar-cloud", x, width: w, y: top + plotH - hl - hc, height: hc }));
      svg.append(g);
      const every = Math.ceil(series.length / 6);
      if (i % every === 0) svg.append(s("text", { x: x + w / 2, y: H - 6, "text-anchor": "middle" }, clock(b.t)));
    });
    const legend = h("div", { class: "legend" }, h("span", { class: "local" }, "local"), h("span", { class: "cloud" }, "cloud"));
    return h("div", {}, svg, legend);
  };

  function label(e) {
    const text = e.name || e.path || e.id || "";
    return text.length > 22 ? text.slice(0, 21) + "…" : text;
  }

  // A radial layout: the entity at the centre, up to 16 neighbours on a first ring, and for the
  // neighbours given in `second` (id -> their own neighbours) up to 5 of those on an outer ring,
  // inside the parent's slice. Hubs are ringed; the path to the nearest hub is drawn in the accent
  // colour. Nodes are focusable buttons (Enter or a click explains that entity).
  G.neighbourGraph = function neighbourGraph(ex, onPick, second) {
    const W = 640, H = 460, cx = W / 2, cy = H / 2, R1 = 115, R2 = 195;
    const centre = ex.entity;
    const hubIds = new Set((ex.hubs || []).map((x) => x.id));
    const path = ex.path_to_hub || [];
    const step = new Set(path.slice(1).map((id, i) => path[i] + "\n" + id).concat(path.slice(1).map((id, i) => id + "\n" + path[i])));
    const first = (ex.neighbours || []).slice(0, 16);
    const pos = new Map([[centre.id, { x: cx, y: cy, e: centre, cls: "center" }]]);
    const edges = [];
    const slice = (2 * Math.PI) / Math.max(first.length, 1);
    first.forEach((n, i) => {
      const a = slice * i - Math.PI / 2;
      pos.set(n.id, { x: cx + R1 * Math.cos(a), y: cy + R1 * Math.sin(a), e: n, cls: hubIds.has(n.id) ? "hub" : "", a });
      edges.push([centre.id, n.id, n.edge]);
    });
    for (const n of first) {
      const kids = ((second && second.get(n.id)) || []).filter((k) => !pos.has(k.id)).slice(0, 5);
      const parent = pos.get(n.id);
      kids.forEach((k, j) => {
        const a = parent.a + (j - (kids.length - 1) / 2) * (slice / Math.max(kids.length, 2)) * 0.9;
        pos.set(k.id, { x: cx + R2 * Math.cos(a), y: cy + R2 * Math.sin(a), e: k, cls: (hubIds.has(k.id) ? "hub " : "") + "far" });
        edges.push([n.id, k.id, k.edge]);
      });
    }
    const svg = s("svg", {
      class: "graph", viewBox: `0 0 ${W} ${H}`, role: "group",
      "aria-label": `Neighbourhood of ${centre.id}: ${first.length} neighbours, ${pos.size - first.length - 1} more two steps away`,
    });
    for (const [a, b, label] of edges) {
      const p = pos.get(a), q = pos.get(b);
      const hot = step.has(a + "\n" + b);
      svg.append(s("line", { class: "edge" + (hot ? " path" : ""), x1: p.x, y1: p.y, x2: q.x, y2: q.y }, s("title", {}, label || "edge")));
      if (a === centre.id && first.length <= 8 && label) {
        svg.append(s("text", { x: (p.x + q.x) / 2, y: (p.y + q.y) / 2 - 3, "text-anchor": "middle" }, label));
      }
    }
    const node = (p) => {
      const e = p.e, big = p.cls === "center";
      const below = p.y >= cy;
      const g = s("g", { class: "node " + p.cls, transform: `translate(${p.x},${p.y})`, tabindex: 0, role: "button", "aria-label": `${e.kind || "entity"} ${e.id}` },
        s("title", {}, `${e.id}${e.path ? " — " + e.path : ""}`),
        s("circle", { r: big ? 11 : p.cls.includes("far") ? 6 : 8 }),
        s("text", { y: big ? 26 : below ? 20 : -12, "text-anchor": "middle" }, label(e)));
      const pick = () => onPick && onPick(e.id);
      g.addEventListener("click", pick);
      g.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); }
      });
      return g;
    };
    for (const p of pos.values()) if (p.cls !== "center") svg.append(node(p));
    svg.append(node(pos.get(centre.id)));
    const more = (ex.neighbours || []).length - first.length;
    const legend = h("div", { class: "legend" }, h("span", { class: "center" }, "this entity"), h("span", { class: "hub" }, "hub"),
      path.length > 1 ? h("span", { class: "path" }, "path to the nearest hub") : null,
      more > 0 ? h("span", {}, `${more} more neighbours not drawn`) : null);
    return h("div", {}, svg, legend);
  };
})();
