// agentjudge label: one person labels the outputs of a run, keyboard only. The queue comes from the server
// (/api/queue), each item from /api/item, each save goes to POST /api/labels with the page's token; the page
// says "saved" only after the server answered that the line is on disk. Every piece of run data is put on
// the page as text (textContent / text nodes), never parsed as HTML.
"use strict";

const TOKEN = document.querySelector('meta[name="agentjudge-token"]').content;
const LEVELS = [["1", 1, "1"], ["5", 0.5, "0.5"], ["0", 0, "0"]];  // key, value, label
let STATE = null;      // /api/queue
let ITEM = null;       // /api/item
let CHOSEN = {};       // metric -> 0 | 0.5 | 1
let CURSOR = 0;        // the marked metric
let SHOWN_AT = 0;      // when this item was put on the page (ms)
let BUSY = false;

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

async function getJSON(url) {
  const response = await fetch(url);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function status(text, kind) {
  const node = document.getElementById("status");
  node.textContent = text;
  node.className = kind || "";
}

function fmt(x) { return x === null || x === undefined ? "—" : (Math.round(x * 1000) / 1000).toString(); }
function clock(seconds) {
  const s = Math.max(0, Math.round(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}
function keyOf(x) { return [x.record_id, x.generator, x.generator_trial].join("|"); }

// ---------------------------------------------------------------- the item (left)

// JSON on one line when it is short (most arguments), indented when it is not
function json(value) {
  const flat = JSON.stringify(value);
  return el("pre", {}, flat !== undefined && flat.length <= 90 ? flat : JSON.stringify(value, null, 2));
}

function callsBox(calls, title, withOutputs) {
  const box = el("div", {}, el("h3", { text: title }));
  if (!calls || !calls.length) { box.append(el("p", { class: "empty", text: "no calls" })); return box; }
  calls.forEach((c, i) => {
    const after = c.depends_on && c.depends_on.length ? `after ${c.depends_on.map((d) => d + 1).join(", ")}` : "";
    box.append(el("div", { class: "call" },
      el("strong", { text: `${i + 1}. ${c.name}` }), after ? el("span", { class: "after", text: "  " + after }) : null,
      json(c.arguments || {}),
      withOutputs && "output" in c ? el("details", { open: true }, el("summary", { text: "output" }), json(c.output)) : null));
  });
  return box;
}

// --show-reference: the programmatic scores (in the strict mode when the run has it) and, folded, every
// judge's verdicts. A blind page never receives them (the server leaves them out).
function referenceScores(item) {
  if (!item.scores || !item.scores.length) return null;
  return item.scores.find((s) => s.scoring_mode === "strict") || item.scores[0];
}

function referenceParts(item) {
  const score = referenceScores(item);
  const names = STATE.metrics.map((m) => m.key);
  const parts = [el("h3", { text: "programmatic scores (shown: these labels are not blind)" }),
    score ? el("p", { class: "scores", text: `${score.scoring_mode} mode: ` + names.map((m) => `${m} ${fmt(score["p_" + m])}`).join(" · ") })
      : el("p", { class: "empty", text: "no scores (no reference for this output)" })];
  parts.push(el("details", {}, el("summary", { text: `every judge's verdicts (${item.judges.length} verdict sets)` }),
    el("table", { class: "judges" }, el("thead", {}, el("tr", {}, el("th", { text: "judge" }), el("th", { text: "condition" }), el("th", { text: "prompt" }), el("th", { text: "temp." }),
      ...names.map((m) => el("th", { class: "num", text: m })))),
      el("tbody", {}, ...item.judges.map((j) => el("tr", {}, el("td", { text: j.judge }), el("td", { text: j.condition }), el("td", { text: j.variant }), el("td", { text: j.temperature }),
        ...names.map((m) => el("td", { class: "num", text: j.metrics[m] ? (j.metrics[m].verdict === null ? "failed" : fmt(j.metrics[m].verdict)) : "—" }))))))));
  return parts;
}

function renderItem(item) {
  const rec = item.record || {};
  const pred = item.prediction || {};
  const parts = [
    el("h2", { text: `${item.record_id} · ${item.generator}` + (item.generator_trial ? ` (trial ${item.generator_trial})` : "") }),
    el("p", { class: "meta", text: [rec.topology, rec.domain, `${item.difficulty} query`].filter(Boolean).join(" · ") }),
  ];
  if (rec.missing) parts.push(el("p", { class: "failed", text: rec.missing }));
  else {
    parts.push(el("div", { class: "query", id: "query", text: rec.query || "(no query at this difficulty)" }));
    if (rec.system_prompt) parts.push(el("details", {}, el("summary", { text: "system prompt" }), el("pre", {}, rec.system_prompt)));
    parts.push(el("details", { id: "tools" }, el("summary", { text: `tools (${(rec.tools || []).length})` }),
      ...(rec.tools || []).map((t) => el("div", { class: "tool" }, el("strong", { text: t.name }), el("span", { class: "meta", text: "  " + (t.description || "") }), json(t.parameters)))));
  }
  const gt = rec.gt && rec.gt.length ? callsBox(rec.gt, "GT calls, with their outputs", true)
    : el("div", {}, el("h3", { text: "GT calls" }), el("p", { class: "empty", text: "this record has no GT: judge the calls against the query and the tools" }));
  parts.push(el("div", { class: "calls" }, callsBox(pred.calls, `the generator's calls (${item.generator})`, false), gt));
  if (pred.error) parts.push(el("p", { class: "failed", text: "generator error: " + pred.error }));
  if (pred.trajectory) parts.push(el("details", {}, el("summary", { text: `the generator's trajectory (${pred.turns} turns, ${pred.stop_reason}): its calls with their outputs` }), json(pred.trajectory)));
  if (pred.raw_output) parts.push(el("details", {}, el("summary", { text: "the generator's raw output" }), el("pre", {}, pred.raw_output)));
  if (item.scores) parts.splice(3, 0, ...referenceParts(item));  // under the query
  document.getElementById("item").replaceChildren(...parts);
}

// ---------------------------------------------------------------- the panel (right)

function renderPanel() {
  const blocks = STATE.metrics.map((m, i) => {
    const chosen = CHOSEN[m.key];
    const levels = el("div", { class: "levels" }, ...LEVELS.map(([key, value, label]) =>
      el("button", { type: "button", tabindex: "-1", class: "level" + (chosen === value ? " chosen" : ""), "data-value": label,
        onclick: () => { CURSOR = i; choose(value); } }, el("span", { class: "head" }, el("b", { text: label }), el("kbd", { text: key })), m.levels[label] || "")));
    const score = ITEM && referenceScores(ITEM);
    const reference = score ? el("span", { class: "reference", text: `reference ${fmt(score["p_" + m.key])}` }) : null;
    return el("div", { class: "metric" + (i === CURSOR ? " current" : ""), "data-metric": m.key },
      el("div", { class: "name" }, el("span", {}, m.name, reference), el("span", { class: "value", text: chosen === undefined ? "" : String(chosen) })), levels);
  });
  document.getElementById("metrics").replaceChildren(...blocks);
}

function renderHeader() {
  const q = STATE.queue;
  document.getElementById("who").textContent = `${STATE.judge} · sample of ${q.length} ${STATE.sample.difficulty} outputs (seed ${STATE.sample.seed})`;
  const blind = document.getElementById("blind");
  blind.textContent = STATE.show_reference ? "NOT blind: reference shown" : "blind: no scores, no verdicts";
  blind.className = STATE.show_reference ? "no" : "yes";
  document.getElementById("count").textContent = `${STATE.labelled} / ${q.length}`;
  document.getElementById("count").title = `${STATE.labelled} labelled, ${STATE.skipped} skipped` + (STATE.outside ? `, ${STATE.outside} outside the sample` : "");
  document.getElementById("bar-fill").style.width = `${q.length ? (100 * (STATE.labelled + STATE.skipped)) / q.length : 0}%`;
  const where = document.getElementById("where");
  if (!ITEM) { where.textContent = ""; return; }
  if (ITEM.position) {
    const entry = q[ITEM.position - 1];
    const said = entry.labelled ? " · saved before: Enter saves again if you change it" : entry.skipped ? " · skipped before" : "";
    where.textContent = `item ${ITEM.position} of ${q.length} in the sample${said}`;
  } else where.textContent = "outside the sample: this label has no inclusion probability (used in the direct estimate only)";
}

function tick() {
  const mean = STATE && STATE.seconds_mean !== null ? ` · mean ${clock(STATE.seconds_mean)} per item` : "";
  document.getElementById("clock").textContent = ITEM ? `this item ${clock((Date.now() - SHOWN_AT) / 1000)}${mean}` : mean.replace(" · ", "");
}

// ---------------------------------------------------------------- moving

async function loadQueue() { STATE = await getJSON("/api/queue"); }

async function show(entry, replace) {
  const q = new URLSearchParams({ record: entry.record_id, generator: entry.generator, gtrial: String(entry.generator_trial) });
  document.body.removeAttribute("data-ready");
  ITEM = await getJSON("/api/item?" + q.toString());
  CHOSEN = ITEM.label ? { ...ITEM.label.verdicts } : {};
  document.getElementById("note").value = ITEM.label ? ITEM.label.note : "";
  hideSkip();
  const open = STATE.metrics.findIndex((m) => !(m.key in CHOSEN));
  CURSOR = open < 0 ? 0 : open;
  SHOWN_AT = Date.now();
  renderItem(ITEM);
  renderPanel();
  renderHeader();
  tick();
  const url = "?" + q.toString();
  if (replace) history.replaceState(null, "", url); else history.pushState(null, "", url);
  window.scrollTo(0, 0);
  document.body.setAttribute("data-ready", "1");
}

function showDone() {
  ITEM = null;
  document.getElementById("item").replaceChildren(el("p", { class: "done", text: `The sample is done: ${STATE.labelled} labelled, ${STATE.skipped} skipped of ${STATE.queue.length}. Thank you. ← goes back through it; \`agentjudge human-agree\` reads the labels.` }));
  document.getElementById("metrics").replaceChildren();
  renderHeader();
  tick();
  document.body.setAttribute("data-ready", "1");
}

async function goTo(index) {
  if (index === null || index >= STATE.queue.length) { showDone(); return; }
  await show(STATE.queue[Math.max(0, index)]);
}

function here() { return ITEM && ITEM.position ? ITEM.position - 1 : null; }

async function onward() {
  const at = here();
  await goTo(at === null ? STATE.next : at + 1);
}

// ---------------------------------------------------------------- saving

function sameAsSaved() {
  if (!ITEM || !ITEM.label) return false;
  const saved = ITEM.label.verdicts;
  const keys = new Set([...Object.keys(saved), ...Object.keys(CHOSEN)]);
  return [...keys].every((k) => saved[k] === CHOSEN[k]) && ITEM.label.note === document.getElementById("note").value;
}

async function post(verdicts, note) {
  const body = { record_id: ITEM.record_id, generator: ITEM.generator, generator_trial: ITEM.generator_trial, verdicts, note, seconds: (Date.now() - SHOWN_AT) / 1000 };
  const response = await fetch("/api/labels", { method: "POST", headers: { "Content-Type": "application/json", "X-Agentjudge-Token": TOKEN }, body: JSON.stringify(body) });
  let answer = {};
  try { answer = await response.json(); } catch (err) { answer = { error: response.statusText }; }
  if (!response.ok || !answer.saved) throw new Error(answer.error || `HTTP ${response.status}`);
  return answer;
}

async function save() {
  if (BUSY || !ITEM) return;
  if (!Object.keys(CHOSEN).length) { status("Choose a verdict first (1, 5 or 0), or S to skip with a reason.", "error"); return; }
  if (sameAsSaved()) { status("unchanged: nothing written", "info"); await onward(); return; }
  BUSY = true;
  status("saving…", "info");
  try {
    const answer = await post(CHOSEN, document.getElementById("note").value);
    const what = `${ITEM.record_id} · ${ITEM.generator}`;
    await loadQueue();
    await onward();
    status(`✓ saved ${what} (line ${answer.line} of ${STATE.labels_file.split("/").pop()})`, "saved");
    document.body.setAttribute("data-saved", String(STATE.labelled));
  } catch (err) {
    status("NOT saved: " + (err.message || err), "error");
  } finally { BUSY = false; }
}

async function skip(reason) {
  if (BUSY || !ITEM) return;
  if (!reason.trim()) { status("A skip needs its reason.", "error"); return; }
  BUSY = true;
  try {
    const answer = await post({}, reason.trim());
    const what = `${ITEM.record_id} · ${ITEM.generator}`;
    await loadQueue();
    await onward();
    status(`skipped ${what} (line ${answer.line})`, "saved");
  } catch (err) {
    status("NOT saved: " + (err.message || err), "error");
  } finally { BUSY = false; }
}

function choose(value) {
  const metric = STATE.metrics[CURSOR].key;
  CHOSEN[metric] = value;
  const open = STATE.metrics.findIndex((m, i) => i > CURSOR && !(m.key in CHOSEN));
  if (open >= 0) CURSOR = open; else if (CURSOR < STATE.metrics.length - 1) CURSOR += 1;
  renderPanel();
}

function showSkip() { document.getElementById("skip").hidden = false; document.getElementById("skip-reason").focus(); }
function hideSkip() { document.getElementById("skip").hidden = true; document.getElementById("skip-reason").value = ""; }

// ---------------------------------------------------------------- keys

document.addEventListener("keydown", async (event) => {
  if (!STATE || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target.id === "note") {
    if (event.key === "Escape") { target.blur(); event.preventDefault(); }
    else if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); target.blur(); await save(); }
    return;
  }
  if (target.id === "skip-reason") {
    if (event.key === "Escape") { hideSkip(); event.preventDefault(); }
    else if (event.key === "Enter") { event.preventDefault(); const reason = target.value; target.blur(); await skip(reason); }
    return;
  }
  const level = LEVELS.find(([key]) => key === event.key);
  if (level && ITEM) { choose(level[1]); event.preventDefault(); return; }
  switch (event.key) {
    case "ArrowDown": if (ITEM) { CURSOR = Math.min(STATE.metrics.length - 1, CURSOR + 1); renderPanel(); } break;
    case "ArrowUp": if (ITEM) { CURSOR = Math.max(0, CURSOR - 1); renderPanel(); } break;
    case "Enter": await save(); break;
    case "ArrowLeft": {
      const at = here();
      const back = at === null ? (ITEM ? STATE.next : STATE.queue.length) - 1 : at - 1;
      if (back >= 0) { status("", ""); await goTo(back); } else status("This is the first item.", "info");
      break;
    }
    case "ArrowRight": {
      const at = here();
      const entry = at === null ? null : STATE.queue[at];
      if (entry && (entry.labelled || entry.skipped)) { status("", ""); await goTo(at + 1); }
      else status("Not saved yet: Enter saves, S skips with a reason.", "info");
      break;
    }
    case "s": case "S": if (ITEM) showSkip(); break;
    case "n": case "N": if (ITEM) document.getElementById("note").focus(); break;
    default: return;
  }
  event.preventDefault();
});

window.addEventListener("popstate", () => start());

async function start() {
  try {
    await loadQueue();
    const p = new URLSearchParams(location.search);
    if (p.get("record") && p.get("generator")) {
      await show({ record_id: p.get("record"), generator: p.get("generator"), generator_trial: Number(p.get("gtrial") || 0) }, true);
    } else if (STATE.next === null) showDone();
    else await show(STATE.queue[STATE.next], true);
  } catch (err) {
    status(String(err.message || err), "error");
    document.body.setAttribute("data-ready", "error");
  }
}

setInterval(tick, 1000);
start();
