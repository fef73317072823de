// The body of an expanded hit: the event as a key/value table (dotted keys,
// one row per value of an array of scalars) with per-value buttons "filter
// for", "filter out" and "copy", the whole hit as JSON, and "Show context"
// (ctx.openContext, from context.js, when that part of the page is there).
//
// Values are event data: shown with textContent only. A filter button adds
// the clause query_text.js writes for exactly that value, as a new search.
import { text } from "./api.js";
import { addClause, filterClause } from "./query_text.js";

// The body element for `hit`.
export function hitDetail(hit, ctx) {
  const body = document.createElement("div");
  body.className = "hit-detail";
  const actions = document.createElement("div");
  actions.className = "hit-actions";
  const contextButton = button("Show context", "Open the lines around this one from the same source");
  contextButton.hidden = typeof ctx.openContext !== "function";
  contextButton.addEventListener("click", () => {
    if (typeof ctx.openContext === "function") ctx.openContext(hit);
    else contextButton.hidden = true;
  });
  const copyJson = button("Copy JSON", "Copy the whole event as JSON");
  copyJson.addEventListener("click", () => copy(JSON.stringify(hit, null, 2), copyJson));
  actions.append(contextButton, copyJson);

  const table = document.createElement("table");
  table.className = "kv";
  const caption = document.createElement("caption");
  caption.className = "visually-hidden";
  caption.textContent = "Fields of this event";
  table.append(caption);
  for (const [key, value] of fieldsOf(hit)) table.append(fieldRow(key, value, ctx));

  const json = document.createElement("pre");
  json.className = "json";
  json.textContent = JSON.stringify(hit, null, 2);
  body.append(actions, table, json);
  return body;
}

// [dotted key, scalar value] pairs: _id and _index first, then _source.
export function fieldsOf(hit) {
  const out = [];
  for (const k of ["_id", "_index"]) if (hit?.[k] != null) out.push([k, hit[k]]);
  const walk = (value, prefix) => {
    if (Array.isArray(value) && value.every((v) => v === null || typeof v !== "object")) {
      for (const v of value) out.push([prefix, v]);
      if (!value.length) out.push([prefix, value]);
    } else if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const keys = Object.keys(value);
      if (!keys.length) out.push([prefix, value]);
      for (const k of keys) walk(value[k], prefix ? `${prefix}.${k}` : k);
    } else {
      out.push([prefix, value]);
    }
  };
  walk(hit?._source ?? {}, "");
  return out;
}

function fieldRow(key, value, ctx) {
  const tr = document.createElement("tr");
  const th = document.createElement("th");
  th.scope = "row";
  th.textContent = key;
  const td = document.createElement("td");
  td.className = "kv-value";
  td.textContent = text(value);
  const tools = document.createElement("td");
  tools.className = "kv-tools";
  const filterable = value === null || typeof value !== "object";
  if (filterable && value !== null) {
    for (const negate of [false, true]) {
      const b = button(negate ? "−" : "+", `${negate ? "Filter out" : "Filter for"} ${key}: ${text(value)}`);
      b.classList.add(negate ? "filter-out" : "filter-for");
      b.addEventListener("click", () => {
        const q = addClause(ctx.store.get().q, filterClause(key, value, { negate }));
        ctx.store.set({ q, hit: "" }, { push: true });
      });
      tools.append(b);
    }
  }
  const c = button("Copy", `Copy the value of ${key}`);
  c.classList.add("copy");
  c.addEventListener("click", () => copy(text(value), c));
  tools.append(c);
  tr.append(th, td, tools);
  return tr;
}

function button(label, title) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.title = title;
  b.setAttribute("aria-label", title);
  return b;
}

// Copies `value`: the Clipboard API where the page may use it, else a
// selected hidden textarea and execCommand (plain http on another host).
// The button says what happened for a moment.
export async function copy(value, feedback) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(value);
    ok = true;
  } catch {
    const area = document.createElement("textarea");
    area.value = value;
    area.setAttribute("readonly", "");
    area.className = "visually-hidden";
    document.body.append(area);
    area.select();
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    area.remove();
  }
  if (feedback) {
    const label = feedback.textContent;
    feedback.textContent = ok ? "Copied" : "Copy failed";
    feedback.dataset.copied = ok ? "yes" : "no";
    setTimeout(() => { feedback.textContent = label; }, 1200);
  }
  return ok;
}
