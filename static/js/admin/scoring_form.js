/* The challenge form's scoring section (templates/admin/challenges/challenge/
   scoring_section.html): show only what the chosen strategy and plugin use, fill the
   entrypoint from the registry, number the code editor's lines, and keep one template
   input per << config.KEY >> placeholder of the code. Without this script every row
   shows and the form still works: the server validates everything. */
(function () {
  "use strict";

  const PLACEHOLDER = /<<\s*config\.([A-Za-z_][A-Za-z0-9_]*)\s*>>/g;

  function setUp(section) {
    const dataNode = document.getElementById("scoring-plugins");
    const plugins = dataNode ? JSON.parse(dataNode.textContent) : {};
    const strategy = section.querySelector("select[name=scoring_strategy]");
    const plugin = section.querySelector("select[name=scoring_plugin_id]");
    const entrypoint = section.querySelector("input[name=scoring_entrypoint]");

    function showStrategy() {
      const chosen = strategy ? strategy.value : "";
      section.querySelectorAll("[data-strategies]").forEach(function (node) {
        const uses = node.dataset.strategies.split(" ");
        node.hidden = uses.indexOf(chosen) === -1;
      });
      showPlugin(false);
    }

    function showPlugin(fill) {
      if (!plugin) return;
      const id = plugin.value;
      const info = plugins[id];
      if (fill && entrypoint) entrypoint.value = info ? info.entrypoint : "";
      section.querySelectorAll(".scoring-plugin-description[data-plugin]").forEach(function (node) {
        node.hidden = node.dataset.plugin !== id;
      });
      if (strategy && strategy.value !== "custom") return;
      section.querySelectorAll("[data-weights-form]").forEach(function (node) {
        node.hidden = node.dataset.plugin !== id;
      });
      // A plugin without a weights form is configured by the JSON under "Advanced".
      const advanced = section.querySelector(".scoring-advanced");
      const toggleRow = section.querySelector(".scoring-json-toggle");
      const hasForm = Boolean(info && info.has_form);
      if (advanced && id && !hasForm) advanced.open = true;
      if (toggleRow) toggleRow.hidden = !hasForm;
    }

    if (strategy) strategy.addEventListener("change", showStrategy);
    if (plugin) plugin.addEventListener("change", function () { showPlugin(true); });
    showStrategy();

    section.querySelectorAll("[data-code-editor]").forEach(function (editor) {
      codeEditor(editor, section);
    });
  }

  /* A textarea with a line-number gutter beside it. */
  function codeEditor(editor, section) {
    const area = editor.querySelector("textarea");
    const gutter = editor.querySelector("[data-code-gutter]");
    if (!area || !gutter) return;
    let shown = 0;
    function number() {
      const lines = area.value.split("\n").length;
      if (lines !== shown) {
        const numbers = [];
        for (let i = 1; i <= lines; i += 1) numbers.push(String(i));
        gutter.textContent = numbers.join("\n");
        shown = lines;
      }
      gutter.scrollTop = area.scrollTop;
    }
    area.addEventListener("input", number);
    area.addEventListener("scroll", function () { gutter.scrollTop = area.scrollTop; });
    // Tab indents (four spaces) instead of leaving the editor; Esc then Tab leaves it.
    let escaped = false;
    area.addEventListener("keydown", function (event) {
      if (event.key === "Escape") { escaped = true; return; }
      if (event.key === "Tab" && !event.shiftKey && !escaped && !area.readOnly && !area.disabled) {
        event.preventDefault();
        const start = area.selectionStart;
        area.setRangeText("    ", start, area.selectionEnd, "end");
        number();
      }
      escaped = false;
    });
    number();

    const rows = section.querySelector("[data-template-rows]");
    if (!rows || area.disabled) return;
    let timer = null;
    area.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(function () { templateRows(area.value, rows, section); }, 250);
    });
  }

  /* One input per placeholder: add the missing ones; drop empty ones no longer used. */
  function templateRows(code, rows, section) {
    const keys = [];
    let match;
    PLACEHOLDER.lastIndex = 0;
    while ((match = PLACEHOLDER.exec(code)) !== null) {
      if (keys.indexOf(match[1]) === -1) keys.push(match[1]);
    }
    const existing = {};
    rows.querySelectorAll("input[name^='template.']").forEach(function (input) {
      const key = input.name.slice("template.".length);
      existing[key] = input;
      const row = input.closest(".form-row");
      if (keys.indexOf(key) === -1 && input.value === "" && row) row.remove();
    });
    keys.forEach(function (key) {
      if (existing[key]) return;
      rows.appendChild(templateRow(key));
    });
    const empty = section.querySelector("[data-template-empty]");
    if (empty) empty.hidden = rows.querySelector("input") !== null;
  }

  function templateRow(key) {
    const id = "id_template." + key;
    const row = document.createElement("div");
    row.className = "form-row scoring-template";
    const outer = document.createElement("div");
    const flex = document.createElement("div");
    flex.className = "flex-container";
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = key + ":";
    const input = document.createElement("input");
    input.type = "text";
    input.name = "template." + key;
    input.id = id;
    const help = document.createElement("div");
    help.className = "help";
    help.textContent = "The value of << config." + key + " >>.";
    flex.append(label, input);
    outer.append(flex, help);
    row.append(outer);
    return row;
  }

  document.addEventListener("DOMContentLoaded", function () {
    const section = document.getElementById("scoring-section");
    if (section) setUp(section);
  });
})();
