// The patterns view (#view-patterns, state.view "patterns"): the most
// frequent message templates of the current search (GET /api/v1/patterns),
// each with its count, a sparkline of its count over the range and a "new"
// badge when the previous range of the same length had none of it. The
// server's masks (<num>, <hex>, <path> ...) are shown as styled
// placeholders. Clicking a template goes back to the hits, narrowed to its
// lines: its literal words, as phrases, AND'ed into q.
//
// Loads only while shown. Templates are log data: text nodes only (a
// placeholder is recognised by its exact mask name, never parsed as markup).
import { errorReason, text } from "./api.js";
import { el } from "./insights.js";
import { addClause } from "./query_text.js";
import { isNewSearch, queryParams } from "./store.js";

const MASK = /(<(?:time|ip|uuid|url|path|hex|num|duration|size|bar|\*)>)/;
const WORD = /[\p{L}\p{N}]+/gu;

// The template as text and placeholder nodes.
function templateNodes(template) {
  return template.split(MASK).filter((piece, i) => i % 2 || piece !== "")
    .map((piece) => (MASK.test(piece) ? el("span", "placeholder", piece.slice(1, -1))
                                      : document.createTextNode(piece)));
}

// Phrases that find the template's lines: the words of each literal segment
// (between masks) as a phrase, the longest few, in template order; a word
// glued to a mask is left out ("rank<num>" is the token rank3, never rank).
export function templatePhrases(template, most = 4) {
  const parts = template.replace(/ …$/, "").split(MASK);
  const phrases = [];
  parts.forEach((part, i) => {
    if (i % 2) return;  // a mask
    const words = [...part.matchAll(WORD)];
    if (i > 0 && words[0]?.index === 0) words.shift();
    const last = words[words.length - 1];
    if (i < parts.length - 1 && last && last.index + last[0].length === part.length) words.pop();
    if (words.length) phrases.push({ i, words: words.slice(0, 12).map((w) => w[0]) });
  });
  const size = (p) => p.words.join("").length;
  return phrases.sort((a, b) => size(b) - size(a)).slice(0, most).sort((a, b) => a.i - b.i)
    .map((p) => `"${p.words.join(" ")}"`);
}

function sparkline(series) {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("class", "sparkline");
  svg.setAttribute("viewBox", "0 0 120 22");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("aria-hidden", "true");
  const values = series.map((v) => Number(v) || 0);
  const max = Math.max(1, ...values);
  const dx = values.length > 1 ? 120 / (values.length - 1) : 0;
  const path = document.createElementNS(NS, "path");
  path.setAttribute("d", values.map((v, i) => `${i ? "L" : "M"}${(i * dx).toFixed(1)},${(21 - (v / max) * 20).toFixed(1)}`).join(""));
  path.setAttribute("vector-effect", "non-scaling-stroke");
  svg.append(path);
  return svg;
}

export function mountPatterns(ctx) {
  const { api, store } = ctx;
  const panel = document.getElementById("view-patterns");
  const status = el("p", "view-state");
  status.setAttribute("aria-live", "polite");
  const table = el("table", "patterns-table");
  panel.append(status, table);
  let call = null;

  function filterBy(template) {
    const q = templatePhrases(template).reduce(addClause, store.get().q);
    store.set({ view: "", q }, { push: true });
  }

  function row(pattern) {
    const template = text(pattern.template);
    const tr = el("tr", "pattern-row");
    const cell = el("td");
    if (pattern.new === true) cell.append(el("span", "pattern-new", "new"));
    const pick = el("button", "pattern-button pattern-template");
    pick.type = "button";
    pick.title = `Show these lines${pattern.example ? `, e.g. ${text(pattern.example)}` : ""}`;
    if (template) pick.append(...templateNodes(template));
    else pick.append(el("i", "", "(no message)"));
    pick.addEventListener("click", () => filterBy(template));
    cell.append(pick);
    const spark = el("td", "col-wide");
    spark.append(sparkline(Array.isArray(pattern.series) ? pattern.series : []));
    tr.append(el("td", "num pattern-count", (Number(pattern.count) || 0).toLocaleString()), cell, spark);
    return tr;
  }

  async function load(state) {
    call?.abort();
    const my = (call = new AbortController());
    status.className = "view-state";
    status.textContent = "Finding patterns…";
    const result = await api.get("api/v1/patterns", queryParams(state), { signal: my.signal });
    if (!result || my !== call) return;
    if (!result.ok) {
      table.replaceChildren();
      status.className = "view-state error";
      const why = result.status === 404 ? "This dashcam has no patterns API." : errorReason(result);
      const retry = el("button", "chip-button", "Retry");
      retry.type = "button";
      retry.addEventListener("click", () => load(store.get()));
      status.replaceChildren(`Patterns unavailable: ${why} `, retry);
      return;
    }
    const patterns = (Array.isArray(result.body?.patterns) ? result.body.patterns : [])
      .filter((p) => p && typeof p.template === "string");
    if (!patterns.length) {
      table.replaceChildren();
      status.textContent = "No messages in this range to find patterns in.";
      return;
    }
    const fresh = patterns.filter((p) => p.new === true).length;
    const read = Number(result.body?.events_read) || 0;
    status.textContent = `${patterns.length} templates from ${read.toLocaleString()} events` +
      (fresh ? ` · ${fresh} new since the previous range` : "") +
      (result.body?.complete === false ? " (a sample: the range holds more)" : "") +
      " · click one to see its lines";
    const head = el("tr");
    head.append(el("th", "num", "Count"), el("th", "", "Template"), el("th", "col-wide", "Over time"));
    const thead = el("thead");
    thead.append(head);
    const body = el("tbody");
    body.append(...patterns.map(row));
    table.replaceChildren(thead, body);
  }

  store.subscribe((state, changed) => {
    if (state.view === "patterns" && (isNewSearch(changed) || changed.has("view"))) load(state);
  });
  if (store.get().view === "patterns") load(store.get());
}
