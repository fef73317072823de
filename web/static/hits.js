// The hits list: the newest hits of the current search, a page at a time
// ("Load more" follows next_cursor). A new search aborts whatever is still in
// flight, so a slow answer to an old query never overwrites a newer one.
//
// Log events are untrusted input: every value taken from one reaches the
// page through textContent or a property, never through innerHTML.
import { errorReason, text } from "./api.js";
import { hideQueryError, showQueryError } from "./query_bar.js";
import { isNewSearch, queryParams } from "./store.js";

const PAGE_SIZE = 100;
const $ = (id) => document.getElementById(id);

export function mountHits({ api, store, setStatus }) {
  const list = $("hits");
  const more = $("more");
  // The search on screen.
  let view = { key: "", cursor: null, shown: 0, controller: null };

  async function fetchPage(state, cursor) {
    view.controller?.abort();
    const controller = new AbortController();
    view.controller = controller;
    const params = { ...queryParams(state), limit: PAGE_SIZE, cursor };
    const result = await api.get("api/v1/search", params, { signal: controller.signal });
    if (view.controller === controller) view.controller = null;
    return result;
  }

  async function search(state) {
    const key = JSON.stringify(queryParams(state));
    view = { key, cursor: null, shown: 0, controller: view.controller };
    hideQueryError();
    more.hidden = true;
    setStatus("Searching…");
    const result = await fetchPage(state, null);
    if (!result || view.key !== key) return;
    list.replaceChildren();
    show(result, state);
  }

  async function loadMore() {
    if (!view.cursor) return;
    const state = store.get();
    const key = view.key;
    more.disabled = true;
    const result = await fetchPage(state, view.cursor);
    more.disabled = false;
    if (!result || view.key !== key) return;
    show(result, state);
  }

  function show(result, state) {
    if (result.status === 401) {
      list.replaceChildren();
      return;  // the key form is open (key_prompt.js)
    }
    if (!result.ok) {
      if (result.status === 400) showQueryError(result, state.q);
      else showQueryError({ ...result, body: { error: { reason: errorReason(result) } } }, state.q);
      setStatus(view.shown ? `Showing ${view.shown}` : "");
      return;
    }
    const hits = Array.isArray(result.body?.hits) ? result.body.hits : [];
    list.append(...hits.map(hitRow));
    view.shown += hits.length;
    view.cursor = result.body?.next_cursor || null;
    more.hidden = !view.cursor;
    setStatus(summary(result.body, view.shown));
  }

  more.addEventListener("click", loadMore);
  store.subscribe((state, changed) => {
    if (isNewSearch(changed)) search(state);
  });
  search(store.get());
}

function summary(body, shown) {
  const total = body?.total;
  const value = typeof total === "object" && total !== null ? total.value : total;
  const atLeast = body?.total_relation === "gte" || total?.relation === "gte" ? "≥ " : "";
  if (!shown) return `No hits · ${body?.took_ms ?? "?"} ms`;
  const of = value == null ? "" : ` of ${atLeast}${Number(value).toLocaleString()}`;
  return `${shown.toLocaleString()}${of} hits · ${body?.took_ms ?? "?"} ms`;
}

// One row per hit: a <details> whose summary is the log line and whose body,
// built on first open, is the whole hit as JSON.
function hitRow(hit) {
  const src = hit?._source ?? {};
  const timestamp = hit?.["@timestamp"] ?? src["@timestamp"];
  const level = text(src.log?.level ?? src.level);
  const row = document.createElement("li");
  const details = document.createElement("details");
  const line = document.createElement("summary");
  const time = cell("time", formatTime(timestamp));
  time.title = text(timestamp);
  const levelCell = cell("level", level);
  levelCell.classList.add(levelClass(level));
  line.append(time, levelCell, cell("host", text(src.host?.name)),
              cell("message", text(src.message ?? src.msg)));
  details.append(line);
  details.addEventListener("toggle", () => {
    const pre = document.createElement("pre");
    pre.textContent = JSON.stringify(hit, null, 2);
    details.append(pre);
  }, { once: true });
  row.append(details);
  return row;
}

function cell(className, value) {
  const span = document.createElement("span");
  span.className = className;
  span.textContent = value;
  return span;
}

export function levelClass(level) {
  const l = level.toLowerCase();
  if (/^(fatal|panic|crit|critical|err|error|alert|emerg)$/.test(l)) return "lvl-error";
  if (/^(warn|warning)$/.test(l)) return "lvl-warn";
  if (/^(debug|trace)$/.test(l)) return "lvl-debug";
  return "lvl-info";
}

// Local time, to the millisecond; the raw value when it is not a date.
export function formatTime(value) {
  if (value == null) return "";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return text(value);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
         `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}
