// Rules page: the editor. Changes are staged, previewed (the diff and the linter's findings), then saved
// into the config file the page shows and applied by the hot-reload path. A bundled profile is never
// edited: the changes can be saved as your own config that extends it.
"use strict";

(() => {
  const { h, clear, fill, api, card } = G;
  const state = { file: null, names: [], ops: [] };
  const el = {
    where: h("div", { id: "edit-where" }),
    pending: h("ul", { class: "list", id: "pending-ops" }),
    out: h("div", { id: "edit-out", "aria-live": "polite" }),
    ruleSelect: h("select", { id: "edit-rule", "aria-label": "Rule" }),
  };

  function describeOp(op) {
    if (op.op === "add") return `add rule ${op.rule.name} (priority ${op.rule.priority}, ${op.rule.trigger.type} → ${op.rule.action.target})`;
    if (op.op === "move") return `move ${op.name} to place ${op.to + 1} in the file`;
    return `${op.name}: ` + Object.entries(op.fields).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join(", ");
  }

  function renderPending() {
    fill(el.pending, state.ops.length
      ? state.ops.map((op, i) => h("li", {}, describeOp(op), " ",
        h("button", { type: "button", class: "small", "data-remove": String(i), onclick: () => { state.ops.splice(i, 1); renderPending(); } }, "Remove")))
      : h("li", { class: "muted" }, "No changes staged."));
  }

  function stage(op) {
    state.ops.push(op);
    renderPending();
  }

  function changeForm() {
    const rule = el.ruleSelect;
    const what = h("select", { id: "edit-action", "aria-label": "Change" },
      h("option", { value: "disable" }, "disable"), h("option", { value: "enable" }, "enable"),
      h("option", { value: "priority" }, "set priority"), h("option", { value: "target" }, "send to (local | cloud)"),
      h("option", { value: "move" }, "move to place in the file"));
    const value = h("input", { id: "edit-value", "aria-label": "Value", placeholder: "value" });
    const add = h("button", { type: "button", id: "stage-change" }, "Stage change");
    add.addEventListener("click", () => {
      const name = rule.value, v = value.value.trim();
      if (what.value === "disable" || what.value === "enable") stage({ op: "set", name, fields: { enabled: what.value === "enable" } });
      else if (what.value === "priority") stage({ op: "set", name, fields: { priority: parseInt(v, 10) } });
      else if (what.value === "target") stage({ op: "set", name, fields: { action: { target: v } } });
      else stage({ op: "move", name, to: Math.max(0, parseInt(v, 10) - 1) });
    });
    return h("div", { class: "row" }, rule, what, value, add);
  }

  function addForm() {
    const name = h("input", { id: "new-name", "aria-label": "New rule name", placeholder: "name" });
    const priority = h("input", { id: "new-priority", "aria-label": "Priority", placeholder: "priority", inputmode: "numeric" });
    const kind = h("select", { id: "new-trigger", "aria-label": "Trigger type" },
      ["regex", "explicit", "context_size", "always"].map((k) => h("option", { value: k }, k)));
    const value = h("input", { id: "new-trigger-value", "aria-label": "Trigger", placeholder: "pattern · /cmd,/cmd2 · > 8000" });
    const target = h("select", { id: "new-target", "aria-label": "Target" }, h("option", { value: "local" }, "local"), h("option", { value: "cloud" }, "cloud"));
    const add = h("button", { type: "button", id: "stage-add" }, "Stage new rule");
    add.addEventListener("click", () => {
      const v = value.value.trim();
      const trigger = { type: kind.value };
      if (kind.value === "regex") trigger.pattern = v;
      else if (kind.value === "explicit") trigger.commands = v.split(",").map((c) => c.trim()).filter(Boolean);
      else if (kind.value === "context_size") { const [op, n] = v.split(/\s+/); trigger.operator = op; trigger.value = parseInt(n, 10); }
      stage({ op: "add", rule: { name: name.value.trim(), priority: parseInt(priority.value, 10), trigger, action: { target: target.value } } });
    });
    return h("div", { class: "row" }, name, priority, kind, value, target, add);
  }

  function showResult(r, saved) {
    const lint = r.lint || { errors: [], warnings: [] };
    const findings = [...lint.errors.map((i) => ["error", i]), ...lint.warnings.map((i) => ["warning", i])];
    fill(el.out,
      h("pre", { id: "edit-diff", class: "diff" }, r.diff || "(no change to the file)"),
      h("div", { id: "edit-lint" }, findings.length
        ? h("ul", { class: "list" }, findings.map(([sev, i]) => h("li", {}, G.badge(sev, sev), " ",
          i.rule || i.key ? h("strong", {}, [i.rule, i.key].filter(Boolean).join(" · ") + ": ") : "", i.message)))
        : h("p", {}, G.badge("ok", "ok"), " The linter finds nothing.")),
      saved ? h("p", { id: "edit-result" }, saved) : null);
  }

  async function send(save) {
    clear(el.out);
    if (!state.ops.length) { el.out.append(h("p", { class: "muted" }, "Stage a change first.")); return; }
    const bundled = state.file && state.file.bundled;
    const path = bundled && save ? "/api/router/rules/save-as" : "/api/router/rules/edit";
    const body = bundled && save ? { ops: state.ops } : { ops: state.ops, save, digest: state.file && state.file.digest };
    try {
      const r = await api(path, { body });
      let said = null;
      if (save && bundled) said = `Saved ${r.path}. ${r.next}.`;
      else if (save) said = r.reload && r.reload.ok ? `Saved and reloaded: ${r.reload.rules} rules in force.` : "Saved; the reload was refused (see the findings).";
      showResult(r, said);
      if (save) {
        state.ops = [];
        renderPending();
        await load();
        if (G.reloadRules) G.reloadRules();
      }
    } catch (e) {
      if (e.body && e.body.diff !== undefined) showResult(e.body, "Not saved: the linter found errors.");
      else el.out.append(G.errorBox(e));
    }
  }

  async function load() {
    const [file, rules] = await Promise.all([api("/api/router/rules/file"), api("/api/router/rules")]);
    state.file = file;
    state.names = rules.rules.map((r) => r.name);
    fill(el.ruleSelect, state.names.map((n) => h("option", { value: n }, n)));
    fill(el.where, file.bundled
      ? h("p", {}, "The rules come from the bundled profile ", h("code", {}, file.profile), ", which is never edited. ",
        "Stage your changes, then save them as your own config (", h("code", {}, "extends: " + file.profile), ") at ", h("code", {}, file.save_as), ".")
      : h("p", {}, "Edits ", h("code", {}, file.path), " (only its routing.rules; comments and layout stay as they are)."));
    return file;
  }

  async function start() {
    let file;
    const box = h("div", { class: "stack" });
    G.main().append(card("Edit the rules", el.where, box));
    try {
      file = await load();
    } catch (e) {
      box.append(G.errorBox(e));
      return;
    }
    const buttons = h("div", { class: "row" },
      h("button", { type: "button", id: "preview-edit", onclick: () => send(false) }, "Preview diff and lint"),
      file.bundled
        ? h("button", { type: "button", class: "primary", id: "save-as", onclick: () => send(true) }, "Save as my config")
        : h("button", { type: "button", class: "primary", id: "save-edit", onclick: () => send(true) }, "Save and reload"));
    if (file.bundled) buttons.firstChild.hidden = true;  // a preview needs a file to diff: save-as shows it
    box.append(h("h3", {}, "Change a rule"), changeForm(), h("h3", {}, "Add a rule"), addForm(),
      h("h3", {}, "Staged changes"), el.pending, buttons, el.out);
    renderPending();
  }

  start();
})();
