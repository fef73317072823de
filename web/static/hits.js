// The hits list: the newest hits of the current search, a page at a time.
// The next page is fetched by itself when the "Load more" button nears the
// viewport (the button stays for keyboards and as the fallback). Rows are
// light (hit_row.js; the detail is built on first open) and the list uses
// content-visibility, so 10 000 rows scroll smoothly without virtualizing.
//
// A new search aborts whatever is still in flight, so a slow answer to an
// old query never overwrites a newer one. The designed states live here
// too: "Searching…" (only after a short delay, so fast answers never flash
// it), "No hits" with buttons that widen the range, and the errors
// (dashcam unreachable, query timeout, too many requests) with a retry.
//
// The expanded hit's _id is state.hit (history replaced, not pushed), so a
// link reopens it. insertLiveHits() puts live-tail events on top (tail.js).
import { errorReason, text } from "./api.js";
import { hitDetail } from "./hit_detail.js";
import { hitRow } from "./hit_row.js";
import { hideQueryError, showQueryError } from "./query_bar.js";
import { isNewSearch, queryParams } from "./store.js";

const PAGE_SIZE = 200;
const LOADING_DELAY_MS = 250;
const $ = (id) => document.getElementById(id);

let insertLive = () => {};

// Puts `hits` (oldest first, as the tail sends them) on top of the list.
export function insertLiveHits(hits) {
  insertLive(hits);
}

export function mountHits(ctx) {
  const { api, store, setStatus } = ctx;
  const list = $("hits");
  const more = $("more");
  const status = $("status");
  const notice = document.createElement("div");
  notice.id = "notice";
  notice.className = "notice";
  notice.hidden = true;
  status.after(notice);
  // The search on screen.
  let view = { key: "", cursor: null, shown: 0, controller: null, body: null };
  let retryTimer = null;

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
    view = { key, cursor: null, shown: 0, controller: view.controller, body: null };
    clearTimeout(retryTimer);
    hideQueryError();
    more.hidden = true;
    const loading = setTimeout(() => {
      if (view.key !== key) return;
      status.classList.add("loading");
      list.setAttribute("aria-busy", "true");
      setStatus("Searching…");
    }, LOADING_DELAY_MS);
    const result = await fetchPage(state, null);
    clearTimeout(loading);
    if (!result || view.key !== key) return;
    status.classList.remove("loading");
    list.removeAttribute("aria-busy");
    hideNotice();
    list.replaceChildren();
    show(result, state);
    if (result.ok) await openSelected(store.get());
  }

  async function loadMore() {
    if (!view.cursor || view.controller) return;
    const state = store.get();
    const key = view.key;
    more.disabled = true;
    const result = await fetchPage(state, view.cursor);
    more.disabled = false;
    if (!result || view.key !== key) return;
    show(result, state);
    // The observer reports changes only: a page that left the button near
    // the viewport (or one that arrived while another was loading) goes on.
    if (!more.hidden && more.getBoundingClientRect().top < innerHeight + 1200) loadMore();
  }

  function show(result, state) {
    if (result.status === 401) {
      list.replaceChildren();
      return;  // the key form is open (key_prompt.js)
    }
    if (!result.ok) {
      showError(result, state);
      return;
    }
    const hits = Array.isArray(result.body?.hits) ? result.body.hits : [];
    const rows = document.createDocumentFragment();
    for (const hit of hits) rows.append(hitRow(hit, onToggle));
    list.append(rows);
    view.shown += hits.length;
    view.body = result.body;
    view.cursor = result.body?.next_cursor || null;
    more.hidden = !view.cursor;
    setStatus(summary(result.body, view.shown));
    if (!view.shown) showEmpty(state);
  }

  // -- states ---------------------------------------------------------------

  function hideNotice() {
    notice.hidden = true;
    notice.replaceChildren();
    notice.className = "notice";
  }

  function showNotice(kind, title, detail, actions) {
    notice.className = `notice notice-${kind}`;
    notice.setAttribute("role", kind === "empty" ? "status" : "alert");
    const h = document.createElement("p");
    h.className = "notice-title";
    h.textContent = title;
    const p = document.createElement("p");
    p.textContent = detail;
    const row = document.createElement("div");
    row.className = "notice-actions";
    for (const [label, fn] of actions) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.addEventListener("click", fn);
      row.append(b);
    }
    notice.replaceChildren(h, ...(detail ? [p] : []), ...(actions.length ? [row] : []));
    notice.hidden = false;
  }

  function showEmpty(state) {
    const actions = [];
    if (state.from !== "now-7d") actions.push(["Last 7 days", () => store.set({ from: "now-7d", to: "now" }, { push: true })]);
    if (state.from !== "") actions.push(["All time", () => store.set({ from: "", to: "now" }, { push: true })]);
    if (state.q) actions.push(["Clear the query", () => store.set({ q: "" }, { push: true })]);
    const detail = state.from === "" ? "Nothing matches the query in any stored event." : "Nothing matches in this time range.";
    showNotice("empty", "No hits — widen the range?", detail, actions);
  }

  function showError(result, state) {
    const retry = ["Retry", () => search(store.get())];
    setStatus(view.shown ? `Showing ${view.shown}` : "");
    const type = text(result.body?.error?.type);
    if (result.status === 400) {
      showQueryError(result, state.q);
    } else if (result.status === 0) {
      showNotice("error", "dashcam cannot be reached", `${errorReason(result)}. Is the server running?`, [retry]);
    } else if (result.status === 503 && type === "query_timeout") {
      showNotice("error", "The query took too long",
                 "Narrow the time range or make the query more specific, then retry.", [retry]);
    } else if (result.status === 429) {
      const seconds = Math.min(Math.max(Number(result.retryAfter) || 5, 1), 300);
      showNotice("error", "dashcam is busy", `Too many requests: retrying in ${seconds} s.`, [retry]);
      const key = view.key;
      retryTimer = setTimeout(() => { if (view.key === key) search(store.get()); }, seconds * 1000);
    } else {
      showNotice("error", `The search failed (HTTP ${result.status})`, errorReason(result), [retry]);
    }
  }

  // -- the expanded hit -----------------------------------------------------

  function onToggle(details, hit) {
    const id = text(hit?._id);
    if (details.open) {
      if (!details.querySelector(".hit-detail")) details.append(hitDetail(hit, ctx));
      store.set({ hit: id });
    } else if (store.get().hit === id) {
      store.set({ hit: "" });
    }
  }

  function rowOf(id) {
    return id ? list.querySelector(`li[data-id="${CSS.escape(id)}"]`) : null;
  }

  // Opens state.hit's row; one not on the first page is fetched by its _id
  // and pinned on top, so a link to any hit reopens it.
  async function openSelected(state) {
    for (const d of list.querySelectorAll("details[open]")) {
      if (d.parentElement.dataset.id !== state.hit) d.open = false;
    }
    if (!state.hit) return;
    let row = rowOf(state.hit);
    if (!row) {
      const key = view.key;
      const q = `_id:${state.hit.replace(/[^0-9A-Za-z_-]/g, "")}`;
      const result = await api.get("api/v1/search", { q, limit: 1 });
      const hit = result?.ok ? result.body?.hits?.[0] : null;
      if (!hit || view.key !== key || rowOf(state.hit)) return;
      row = hitRow(hit, onToggle);
      row.classList.add("pinned");
      list.prepend(row);
    }
    const details = row.querySelector("details");
    details.open = true;
    row.scrollIntoView({ block: "nearest" });
  }

  list.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    const details = event.target.closest?.("details[open]");
    if (!details) return;
    details.open = false;
    details.querySelector("summary").focus();
    event.preventDefault();
  });

  insertLive = (hits) => {
    if (!hits.length) return;
    if (!notice.hidden && notice.classList.contains("notice-empty")) hideNotice();
    for (const hit of hits) {
      if (rowOf(text(hit?._id))) continue;
      const row = hitRow(hit, onToggle);
      row.classList.add("live");
      list.prepend(row);
      view.shown++;
    }
    setStatus(summary(view.body, view.shown));
  };

  more.addEventListener("click", loadMore);
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadMore();
  }, { rootMargin: "1200px 0px" }).observe(more);
  store.subscribe((state, changed) => {
    if (isNewSearch(changed)) search(state);
    else if (changed.has("hit")) openSelected(state);
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
