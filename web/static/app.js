// dashcam's search page: runs a query against GET /api/v1/search and lists
// the hits, newest first, with "Load more" following next_cursor.
//
// Log events are untrusted input: every value taken from one reaches the page
// through textContent or a property, never through innerHTML.
//
// When dashcam requires a key (--auth-file), any 401 opens a form asking for
// one (id:key); it is sent as `Authorization: ApiKey base64(id:key)` with
// every API request and kept in sessionStorage only, so it lasts as long as
// the tab. Every request also carries `X-Dashcam-Client: web`, for which the
// server's 401 offers no Basic challenge (which would make the browser open
// its own credentials dialog).

const PAGE_SIZE = 100;

const $ = (id) => document.getElementById(id);
const form = $("search");
const input = $("q");
const hitsList = $("hits");
const moreButton = $("more");
const statusLine = $("status");
const errorBox = $("error");
const keyDialog = $("key-dialog");
const keyForm = $("key-form");
const keyInput = $("key-input");
const keyError = $("key-error");
const keySubmit = $("key-submit");
const forgetKeyButton = $("forget-key");

// The ApiKey token (base64 of "id:key") the user gave in this tab, or null.
const KEY_ITEM = "dashcam.apiKey";
let apiKey = sessionStorage.getItem(KEY_ITEM);

// Every call the page makes to the API goes through here.
function apiFetch(path, { signal, key = apiKey } = {}) {
  const headers = { Accept: "application/json", "X-Dashcam-Client": "web" };
  if (key) headers.Authorization = `ApiKey ${key}`;
  return fetch(path, { signal, headers, cache: "no-store" });
}

// The search on screen. A new search aborts whatever is still in flight, so a
// slow answer to an old query can never overwrite a newer one.
let view = { q: "", nextCursor: null, shown: 0, controller: null };

// `key`: the token to try instead of the saved one (the key form's).
async function fetchPage(q, cursor, key = apiKey) {
  view.controller?.abort();
  const controller = new AbortController();
  view.controller = controller;
  const params = new URLSearchParams({ q, limit: String(PAGE_SIZE) });
  if (cursor) params.set("cursor", cursor);
  try {
    const response = await apiFetch(`api/v1/search?${params}`, { signal: controller.signal, key });
    const body = await response.json().catch(() => null);
    const retryAfter = response.headers.get("Retry-After");
    return { ok: response.ok, status: response.status, body, retryAfter };
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

function showPage({ ok, status, body, retryAfter }) {
  if (status === 401) {
    // No key yet, or the saved one no longer works (the key file changed).
    const refused = apiKey !== null;
    forgetKey();
    hitsList.replaceChildren();
    moreButton.hidden = true;
    askForKey(refused ? `The saved key was refused: ${text(body?.error?.reason)}` : "");
    return;
  }
  if (!ok) {
    showError(status, errorFor(status, body?.error, retryAfter));
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

// 403 and 429 in words a person can act on; other errors as the API says.
function errorFor(status, error, retryAfter) {
  const reason = text(error?.reason);
  if (status === 403) return { reason: `This API key may not search: ${reason}` };
  if (status === 429) return { reason: retryAfter ? `${reason} (in ${retryAfter} s)` : reason };
  return error;
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

// ---- The key form ----

function askForKey(message) {
  showKeyError(message);
  statusLine.textContent = "This dashcam needs an API key.";
  if (!keyDialog.open) keyDialog.showModal();
  keyInput.focus();
}

function showKeyError(message) {
  keyError.textContent = message;
  keyError.hidden = !message;
}

// "id:key" as the ApiKey token, base64 of its UTF-8 bytes; a token pasted
// as is (hash-key prints both). Null when it is neither.
function keyToken(value) {
  const v = value.trim();
  const colon = v.indexOf(":");
  if (colon > 0 && colon < v.length - 1) {
    return btoa(String.fromCharCode(...new TextEncoder().encode(v)));
  }
  try {
    const decoded = atob(v);
    const c = decoded.indexOf(":");
    return c > 0 && c < decoded.length - 1 ? v : null;
  } catch {
    return null;
  }
}

function saveKey(token) {
  apiKey = token;
  sessionStorage.setItem(KEY_ITEM, token);
  forgetKeyButton.hidden = false;
}

function forgetKey() {
  apiKey = null;
  sessionStorage.removeItem(KEY_ITEM);
  forgetKeyButton.hidden = true;
}

// The key is tried with the search on screen and kept only once the server
// takes it: a wrong key (401), a key that may not search (403) or a lockout
// (429) stays in the form with the reason.
async function submitKey() {
  const token = keyToken(keyInput.value);
  if (!token) {
    showKeyError("Enter the key as id:key, for example zhangsan:3_QExbNq8Hk2p….");
    keyInput.focus();
    return;
  }
  showKeyError("");
  keySubmit.disabled = true;
  const q = view.q;
  view = { q, nextCursor: null, shown: 0, controller: view.controller };
  const page = await fetchPage(q, null, token);
  keySubmit.disabled = false;
  if (!page) return;
  const reason = text(page.body?.error?.reason);
  let problem = "";
  if (page.status === 401) problem = `That key was refused: ${reason}`;
  else if (page.status === 403) problem = `This key may not search: ${reason}`;
  else if (page.status === 429) problem = errorFor(429, page.body?.error, page.retryAfter).reason;
  else if (page.status === 0 || page.status >= 500) problem = `Cannot check the key: ${reason}`;
  if (problem) {
    showKeyError(problem);
    keyInput.select();
    return;
  }
  saveKey(token);
  keyInput.value = "";
  keyDialog.close();
  hideError();
  hitsList.replaceChildren();
  showPage(page);
}

keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  submitKey();
});
// Escape keeps the form open, with what was typed: without a key the page
// can show nothing.
keyDialog.addEventListener("cancel", (event) => event.preventDefault());
// Should the browser close it anyway, the next search opens it again.
keyDialog.addEventListener("close", () => {
  if (apiKey === null) statusLine.textContent = "This dashcam needs an API key: search to enter one.";
});
forgetKeyButton.addEventListener("click", () => {
  forgetKey();
  hitsList.replaceChildren();
  runSearch(view.q);
});
forgetKeyButton.hidden = apiKey === null;

form.addEventListener("submit", (event) => {
  event.preventDefault();
  runSearch(input.value.trim());
});
moreButton.addEventListener("click", loadMore);

input.value = new URLSearchParams(location.hash.slice(1)).get("q") ?? "";
runSearch(input.value.trim());
