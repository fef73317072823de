// dashcam's search page: runs a query against GET /api/v1/search and lists
// the hits, newest first, with "Load more" following next_cursor.
//
// Log events are untrusted input: every value taken from one reaches the page
// through textContent or a property, never through innerHTML.

const PAGE_SIZE = 100;

const $ = (id) => document.getElementById(id);
const form = $("search");
const input = $("q");
const hitsList = $("hits");
const moreButton = $("more");
const statusLine = $("status");
const errorBox = $("error");

// The search on screen. A new search aborts whatever is still in flight, so a
// slow answer to an old query can never overwrite a newer one.
let view = { q: "", nextCursor: null, shown: 0, controller: null };

async function fetchPage(q, cursor) {
  view.controller?.abort();
  const controller = new AbortController();
  view.controller = controller;
  const params = new URLSearchParams({ q, limit: String(PAGE_SIZE) });
  if (cursor) params.set("cursor", cursor);
  try {
    const response = await fetch(`api/v1/search?${params}`, {
      signal: controller.signal,
      headers: { Accept: "application/json" },
    });
    const body = await response.json().catch(() => null);
    return { ok: response.ok, status: response.status, body };
  } catch (e) {
    if (e.name === "AbortError") return null;
    return { ok: false, status: 0, body: { error: { reason: `cannot reach dashcam: ${e.message}` } } };
  } finally {
    if (view.controller === controller) view.controller = null;
  }
}

async function runSearch(q) {
  view = { q, nextCursor: null, shown: 0, controller: view.controller };
  history.replaceState(null, "", q ? `#q=${encodeURIComponent(q)}` : location.pathname);
  hideError();
  moreButton.hidden = true;
  statusLine.textContent = "Searching…";
  const page = await fetchPage(q, null);
  if (!page || view.q !== q) return;
  hitsList.replaceChildren();
  showPage(page);
}

async function loadMore() {
  if (!view.nextCursor) return;
  const q = view.q;
  moreButton.disabled = true;
  const page = await fetchPage(q, view.nextCursor);
  moreButton.disabled = false;
  if (!page || view.q !== q) return;
  showPage(page);
}

function showPage({ ok, status, body }) {
  if (!ok) {
    showError(status, body?.error);
    statusLine.textContent = view.shown ? `Showing ${view.shown}` : "";
    return;
  }
  const hits = Array.isArray(body?.hits) ? body.hits : [];
  hitsList.append(...hits.map(hitRow));
  view.shown += hits.length;
  view.nextCursor = body?.next_cursor || null;
  moreButton.hidden = !view.nextCursor;
  statusLine.textContent = summary(body);
}

function summary(body) {
  const total = body?.total;
  const value = typeof total === "object" && total !== null ? total.value : total;
  const atLeast = total?.relation === "gte" ? "≥ " : "";
  if (!view.shown) return `No hits · ${body?.took_ms ?? "?"} ms`;
  const of = value == null ? "" : ` of ${atLeast}${Number(value).toLocaleString()}`;
  return `${view.shown.toLocaleString()}${of} hits · ${body?.took_ms ?? "?"} ms`;
}

// One row per hit: a <details> whose summary is the log line and whose body,
// built on first open, is the whole _source as JSON.
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

function text(value) {
  if (value == null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function levelClass(level) {
  const l = level.toLowerCase();
  if (/^(fatal|panic|crit|critical|err|error|alert|emerg)$/.test(l)) return "lvl-error";
  if (/^(warn|warning)$/.test(l)) return "lvl-warn";
  if (/^(debug|trace)$/.test(l)) return "lvl-debug";
  return "lvl-info";
}

// Local time, to the millisecond; the raw value when it is not a date.
function formatTime(value) {
  if (value == null) return "";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return text(value);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
         `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

// The API answers a bad query with 400 and
// {"error":{"type":"query_parse_error","reason":"...","position":N}},
// N a byte offset into the UTF-8 query: point a caret at it.
function showError(status, error) {
  const position = error?.position;
  const atPosition = Number.isInteger(position) ? ` (position ${position})` : "";
  const prefix = status === 400 || status === 0 ? "" : `HTTP ${status}`;
  const reason = text(error?.reason);
  const message = [prefix, reason].filter(Boolean).join(": ") || `HTTP ${status}`;
  $("error-reason").textContent = message + atPosition;
  const caret = $("error-caret");
  caret.hidden = !Number.isInteger(position);
  if (!caret.hidden) {
    const bytes = new TextEncoder().encode(view.q).slice(0, position);
    const column = new TextDecoder().decode(bytes).length;
    caret.textContent = `${view.q}\n${" ".repeat(column)}^`;
  }
  errorBox.hidden = false;
}

function hideError() {
  errorBox.hidden = true;
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  runSearch(input.value.trim());
});
moreButton.addEventListener("click", loadMore);

input.value = new URLSearchParams(location.hash.slice(1)).get("q") ?? "";
runSearch(input.value.trim());
