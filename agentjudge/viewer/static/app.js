// agentjudge view: the page's whole state lives in the URL query, so a link opens the same view.
// Every piece of run data is put on the page as text (textContent / text nodes), never parsed as HTML.
"use strict";

const FACETS = ["judge", "generator", "difficulty", "condition", "metric", "topology", "domain", "variant", "temperature", "mode"];
const ALL_COLUMNS = [
  ["judge", "judge"], ["generator", "generator"], ["difficulty", "difficulty"], ["condition", "condition"],
  ["metric", "metric"], ["topology", "topology"], ["variant", "prompt"], ["temperature", "temp."], ["record", "record"],
  ["reference", "reference"], ["verdict", "verdict"], ["disagreement", "|ref − verdict|"],
];
let LIST_COLUMNS = ALL_COLUMNS;
let FACET_DATA = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = String(v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function params() { return new URLSearchParams(location.search); }

function go(next, replace) {
  const url = "?" + next.toString();
  if (replace) history.replaceState(null, "", url); else history.pushState(null, "", url);
  render();
}

function setParam(key, value) {
  const p = params();
  if (value === "" || value === null || value === undefined) p.delete(key); else p.set(key, value);
  if (key !== "page") p.delete("page");
  go(p);
}

async function getJSON(url) {
  const response = await fetch(url);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function fmt(x) { return x === null || x === undefined ? "—" : (Math.round(x * 1000) / 1000).toString(); }

function kindOf(name) {
  const k = FACET_DATA && FACET_DATA.kinds[name];
  return k && k !== "litellm" && k !== "plugin" ? k : "";
}

function buildFilters() {
  const form = document.getElementById("filters");
  form.replaceChildren();
  const p = params();
  for (const name of FACETS) {
    const values = FACET_DATA.facets[name] || [];
    if (values.length < 2 && name !== "judge") continue;
    const select = el("select", { name, "aria-label": name, onchange: (e) => setParam(name, e.target.value) });
    if (name === "mode") {  // one scoring mode at a time: the report's unless another is chosen
      for (const v of values) select.append(el("option", { value: v === FACET_DATA.primary_mode ? "" : v, text: v + (v === FACET_DATA.primary_mode ? " (the report's)" : "") }));
      select.append(el("option", { value: "any", text: "both (one row per mode)" }));
      const current = p.get("mode");
      select.value = current && current !== FACET_DATA.primary_mode ? current : "";
      form.append(el("label", {}, "scoring mode", select));
      continue;
    }
    select.append(el("option", { value: "", text: "any" }));
    for (const v of values) select.append(el("option", { value: v, text: v + (kindOf(v) ? " (" + kindOf(v) + ")" : "") }));
    select.value = values.includes(p.get(name)) ? p.get(name) : "";
    form.append(el("label", {}, name, select));
  }
  const floor = el("input", { type: "number", name: "min_disagreement", min: 0, max: 1, step: 0.25,
    value: p.get("min_disagreement") || "", "aria-label": "smallest disagreement",
    onchange: (e) => setParam("min_disagreement", e.target.value) });
  form.append(el("label", {}, "|ref − verdict| ≥", floor));
  const failures = el("input", { type: "checkbox", name: "failures", checked: p.get("failures") === "1",
    onchange: (e) => setParam("failures", e.target.checked ? "1" : "") });
  form.append(el("label", { class: "check" }, failures, "parse / transport failures only"));
  if (FACET_DATA.outcome) {
    const outcome = el("select", { name: "outcome", onchange: (e) => setParam("outcome", e.target.value) },
      el("option", { value: "", text: "any" }), el("option", { value: "matched", text: "state matched" }),
      el("option", { value: "not_matched", text: "state not matched" }));
    outcome.value = p.get("outcome") || "";
    form.append(el("label", {}, "outcome", outcome));
  }
  const sort = el("select", { name: "sort", onchange: (e) => setParam("sort", e.target.value) },
    el("option", { value: "disagreement", text: "largest disagreement first" }),
    el("option", { value: "record", text: "record order" }));
  sort.value = p.get("sort") || "disagreement";
  form.append(el("label", {}, "sort", sort));
  if (p.get("record")) {
    form.append(el("button", { type: "button", onclick: () => {
      const q = params(); q.delete("record"); q.delete("gtrial"); go(q);
    } }, "all records"));
  }
  form.append(el("button", { type: "button", onclick: () => go(new URLSearchParams()) }, "clear filters"));
}

async function renderList() {
  const p = params();
  const data = await getJSON("/api/rows?" + p.toString());
  const table = document.getElementById("rows");
  table.tHead.replaceChildren(el("tr", {}, ...LIST_COLUMNS.map(([key, label]) =>
    el("th", { class: ["reference", "verdict", "disagreement"].includes(key) ? "num" : "", text: label }))));
  const body = el("tbody");
  for (const row of data.rows) {
    const open = p.get("record") === row.record && p.get("generator") === row.generator;
    const tr = el("tr", { class: open ? "open" : "", tabindex: 0, "data-record": row.record });
    for (const [key] of LIST_COLUMNS) {
      let value = row[key];
      if (["reference", "verdict", "disagreement"].includes(key)) value = row.failed && key !== "reference" ? "failed" : fmt(value);
      const kind = key === "judge" || key === "generator" ? kindOf(row[key]) : "";
      tr.append(el("td", { class: (["reference", "verdict", "disagreement"].includes(key) ? "num " : "") + (row.failed ? "failed" : "") },
        String(value), kind ? el("span", { class: "kind", text: " " + kind }) : null));
    }
    const openItem = () => {
      const q = params(); q.set("record", row.record); q.set("generator", row.generator);
      if (row.generator_trial) q.set("gtrial", row.generator_trial); else q.delete("gtrial");
      q.delete("page"); go(q);
    };
    tr.addEventListener("click", openItem);
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter") openItem(); });
    body.append(tr);
  }
  table.tBodies[0].replaceWith(body);
  const pages = Math.max(1, Math.ceil(data.total / data.per_page));
  document.getElementById("summary").textContent =
    `${data.total.toLocaleString()} verdict rows match (of ${FACET_DATA.rows.toLocaleString()}); page ${data.page} of ${pages}. Click a row to open its item.`;
  const pager = document.getElementById("pager");
  pager.replaceChildren(
    el("button", { type: "button", disabled: data.page <= 1, onclick: () => setParam("page", data.page - 1) }, "← previous"),
    el("span", { text: `page ${data.page} / ${pages}` }),
    el("button", { type: "button", disabled: data.page >= pages, onclick: () => setParam("page", data.page + 1) }, "next →"));
}

function jsonBlock(value) { return el("pre", {}, typeof value === "string" ? value : JSON.stringify(value, null, 2)); }

function callsList(calls, title) {
  const box = el("div", {}, el("h3", { text: title }));
  if (!calls || !calls.length) { box.append(el("p", { class: "note", text: "no calls" })); return box; }
  calls.forEach((c, i) => {
    const head = `${i + 1}. ${c.name}` + (c.depends_on && c.depends_on.length ? `  (after ${c.depends_on.map((d) => d + 1).join(", ")})` : "");
    box.append(el("div", {}, el("strong", { text: head }), jsonBlock(c.arguments || {}),
      "output" in c ? el("details", {}, el("summary", { text: "output" }), jsonBlock(c.output)) : null));
  });
  return box;
}

function scoresTable(scores) {
  const metrics = ["p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag", "state_match", "writes_done"];
  const present = metrics.filter((m) => scores.some((s) => s[m] !== null && s[m] !== undefined));
  return el("table", {}, el("thead", {}, el("tr", {}, el("th", { text: "scoring mode" }), ...present.map((m) => el("th", { class: "num", text: m })))),
    el("tbody", {}, ...scores.map((s) => el("tr", {}, el("td", { text: s.scoring_mode }), ...present.map((m) => el("td", { class: "num", text: fmt(s[m]) }))))));
}

// People's labels (human/NAME, labels/NAME.jsonl) as rows of the judges' table: the person's verdict with the
// reference beside it, their note where the judges have a rationale.
function peopleRows(people, scores, mode, metrics, settings) {
  const score = scores.find((s) => s.scoring_mode === mode) || scores[0] || {};
  return people.map((p) => {
    if (p.error) return el("tr", {}, el("td", { class: "failed", colspan: String(2 + settings.length + metrics.length), text: p.error }));
    const how = (p.skipped ? "skipped" : p.blind ? "blind" : "saw the reference") + (p.in_sample ? "" : ", outside the sample");
    const cells = metrics.map((m) => {
      if (!(m in p.verdicts)) return el("td", { class: "num", text: "—" });
      const v = p.verdicts[m];
      const ref = score["p_" + m];
      const gap = ref === undefined || ref === null ? null : Math.abs(ref - v);
      const cls = "num " + (gap === null ? "" : gap < 1e-9 ? "match" : gap < 0.5 ? "near" : "mismatch");
      return el("td", { class: cls, text: fmt(v) + (gap === null ? "" : ` (${fmt(ref)})`) });
    });
    const note = el("td", {}, p.note ? el("span", { class: "note", text: (p.skipped ? "skipped: " : "note: ") + p.note }) : null);
    return el("tr", { class: "person" }, el("td", {}, p.judge, el("span", { class: "kind", text: " person" })),
      ...settings.map(([k]) => el("td", { text: k === "condition" ? how : "" })), ...cells, note);
  });
}

function judgesTable(judges, mode, people, scores) {
  const metrics = ["tool", "param", "seq", "cov", "outcome"].filter((m) => judges.some((j) => m in j.metrics) || (people || []).some((p) => p.verdicts && m in p.verdicts));
  // a prompt or temperature column only when the run varies it (as in the list): one value says nothing
  const varies = (k) => (FACET_DATA.facets[k] || []).length > 1;
  const settings = [["condition", "condition"], ["variant", "prompt"], ["temperature", "temp."]].filter(([k]) => k === "condition" || varies(k));
  const head = el("tr", {}, el("th", { text: "judge" }), ...settings.map(([, label]) => el("th", { text: label })),
    ...metrics.map((m) => el("th", { class: "num", text: `${m}: verdict (reference)` })),
    el("th", { text: "rationale and raw answer" }));
  const rows = judges.map((j) => {
    const cells = metrics.map((m) => {
      const v = j.metrics[m];
      if (!v) return el("td", { class: "num", text: "—" });
      const ref = v.reference[mode] !== undefined ? v.reference[mode] : Object.values(v.reference)[0];
      const failed = v.verdict === null;
      const gap = failed ? null : Math.abs(ref - v.verdict);  // green: equal; yellow: under 0.5 apart; red: 0.5 or more
      const unreferenced = ref === null || ref === undefined;  // a record without GT: no colour, nothing to match
      const cls = "num " + (failed ? "failed" : unreferenced ? "" : gap < 1e-9 ? "match" : gap < 0.5 ? "near" : "mismatch");
      return el("td", { class: cls, text: (failed ? "failed" : fmt(v.verdict)) + ` (${fmt(ref)})` });
    });
    const why = el("td", {});
    const rationales = j.rationales || Object.fromEntries(Object.entries(j.metrics).map(([m, v]) => [m, v.rationale]));
    const lines = Object.entries(rationales || {}).filter(([, v]) => v).map(([m, v]) => `${m}: ${v}`);
    if (lines.length) why.append(el("details", {}, el("summary", { text: "rationale" }), el("pre", {}, lines.join("\n"))));
    if (j.raw_output) why.append(el("details", {}, el("summary", { text: "raw answer" }), el("pre", {}, j.raw_output)));
    if (j.error) why.append(el("div", { class: "failed", text: j.error }));
    const kind = kindOf(j.judge);
    return el("tr", {}, el("td", {}, j.judge, kind ? el("span", { class: "kind", text: " " + kind }) : null),
      ...settings.map(([k]) => el("td", { text: j[k] })), ...cells, why);
  });
  rows.push(...peopleRows(people || [], scores || [], mode, metrics, settings));
  return el("table", { class: "verdicts" }, el("thead", {}, head), el("tbody", {}, ...rows));
}

async function renderItem() {
  const p = params();
  const section = document.getElementById("item");
  if (!p.get("record") || !p.get("generator")) { section.hidden = true; section.replaceChildren(); return; }
  const q = new URLSearchParams({ record: p.get("record"), generator: p.get("generator"), gtrial: p.get("gtrial") || "0" });
  const item = await getJSON("/api/item?" + q.toString());
  const mode = p.get("mode") || (FACET_DATA.facets.mode.includes("strict") ? "strict" : FACET_DATA.facets.mode[0]);
  const rec = item.record || {};
  const back = () => { const b = params(); for (const k of ["record", "generator", "gtrial"]) b.delete(k); go(b); };
  const parts = [
    el("p", { class: "back" }, el("button", { type: "button", id: "back", onclick: back }, "↑ back to the list")),
    el("h2", { text: `${item.record_id} · ${item.generator}` + (item.generator_trial ? ` (trial ${item.generator_trial})` : "") }),
    el("p", { class: "note", text: `${item.topology} · ${item.domain} · ${item.difficulty} query · references shown in ${mode} mode` }),
  ];
  if (rec.missing) parts.push(el("p", { class: "failed", text: rec.missing }));
  else {
    parts.push(el("div", { class: "query", text: rec.query || "(no query at this difficulty)" }));
    const others = Object.entries(rec.queries || {}).filter(([d]) => d !== item.difficulty);
    if (others.length) parts.push(el("details", {}, el("summary", { text: "the other difficulties' queries (same GT)" }),
      ...others.map(([d, text]) => el("p", {}, el("strong", { text: d + ": " }), text))));
    parts.push(el("details", {}, el("summary", { text: `tools (${(rec.tools || []).length})` }),
      ...(rec.tools || []).map((t) => el("div", {}, el("strong", { text: t.name }), el("span", { class: "note", text: " " + (t.description || "") }), jsonBlock(t.parameters)))));
  }
  parts.push(el("h3", { text: "programmatic scores" }), scoresTable(item.scores));
  const narrow = ["condition", "variant", "temperature"].filter((k) => p.get(k));
  const shown = item.judges.filter((j) => narrow.every((k) => j[k] === p.get(k)));
  const picked = p.get("judge");
  if (picked) shown.sort((x, y) => (y.judge === picked) - (x.judge === picked));  // the list's judge first (a stable sort)
  parts.push(el("h3", { text: `every judge on this item: ${shown.length} verdict sets` }));
  if (narrow.length) parts.push(el("p", { class: "note", text: `only ${narrow.map((k) => k + " = " + p.get(k)).join(", ")} (the list's filters); ${item.judges.length - shown.length} more with other settings — clear those filters to see them` }));
  const people = item.people || [];
  if (people.length) parts.push(el("p", { class: "note", text: `and ${people.length} ${people.length === 1 ? "person" : "people"} (human/NAME, labelled with agentjudge label): their verdict (the reference)` }));
  parts.push(judgesTable(shown, mode, people, item.scores));
  const pred = item.prediction;
  const gtBox = rec.gt_known === false
    ? el("div", {}, el("h3", { text: "GT calls" }), el("p", { class: "note", text: "none given: this record has no GT, so nothing is scored and no reference exists" }))
    : callsList(rec.gt, "GT calls (with their outputs)");
  const calls = el("div", { class: "calls" }, gtBox,
    callsList(pred ? pred.calls : null, `${item.generator}'s calls`));
  parts.push(calls);
  if (pred && pred.error) parts.push(el("p", { class: "failed", text: "generator error: " + pred.error }));
  if (pred && pred.trajectory) parts.push(el("details", {}, el("summary", { text: `trajectory (${pred.turns} turns, ${pred.stop_reason})` }), jsonBlock(pred.trajectory)));
  if (pred && pred.raw_output) parts.push(el("details", {}, el("summary", { text: "generator's raw output" }), el("pre", {}, pred.raw_output)));
  section.replaceChildren(...parts);
  section.hidden = false;
}

// The item is drawn under the list (up to 500 rows long): when a click or a link opens another item, bring
// it into view (else the click seems to do nothing); when the item is closed, bring back its row.
let SHOWN_ITEM = "";
function followTheItem() {
  const p = params();
  const key = p.get("record") && p.get("generator") ? [p.get("record"), p.get("generator"), p.get("gtrial") || "0"].join("|") : "";
  if (key && key !== SHOWN_ITEM) document.getElementById("item").scrollIntoView({ block: "start" });
  if (!key && SHOWN_ITEM) {
    const row = [...document.querySelectorAll("#rows tbody tr")].find((tr) => tr.dataset.record === SHOWN_ITEM.split("|")[0]);
    if (row) row.scrollIntoView({ block: "center" }); else window.scrollTo(0, 0);
  }
  SHOWN_ITEM = key;
}

// A link that names a record alone (?record=ID) opens that record: its first generator output in record
// order, as if its row had been clicked (the URL then names the generator too).
async function openRecordAlone() {
  const p = params();
  if (!p.get("record") || p.get("generator")) return;
  const data = await getJSON("/api/rows?" + new URLSearchParams({ record: p.get("record"), sort: "record" }).toString());
  const first = data.rows[0];
  if (!first) return;
  p.set("generator", first.generator);
  if (first.generator_trial) p.set("gtrial", first.generator_trial);
  history.replaceState(null, "", "?" + p.toString());
}

async function render() {
  const status = document.getElementById("status");
  status.textContent = "";
  try {
    if (!FACET_DATA) {
      FACET_DATA = await getJSON("/api/facets");
      LIST_COLUMNS = ALL_COLUMNS.filter(([key]) => !["variant", "temperature"].includes(key) || (FACET_DATA.facets[key] || []).length > 1);
      document.getElementById("run").textContent = `${FACET_DATA.run} — ${FACET_DATA.rows.toLocaleString()} verdict rows`;
      document.getElementById("report-link").hidden = !FACET_DATA.report;
    }
    await openRecordAlone();
    buildFilters();
    await Promise.all([renderList(), renderItem()]);
    followTheItem();
    document.body.setAttribute("data-ready", "1");
  } catch (err) {
    status.textContent = String(err.message || err);
    document.body.setAttribute("data-ready", "error");
  }
}

window.addEventListener("popstate", render);
render();
