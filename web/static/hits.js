// The hits list: the newest hits of the current search, a page at a time.
// The next page is fetched by itself when the "Load more" button nears the
// viewport (the button stays for keyboards and as the fallback). The list
// is windowed (virtual_list.js: only rows near the viewport are in the
// DOM), so 10 000 hits load and scroll as fast as 100. Rows: hit_row.js;
// the expanded body: hit_detail.js. ↑/↓ move between rows, Enter expands,
// Escape collapses.
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
import { createVirtualList } from "./virtual_list.js";

// Rows kept at most while the live tail adds to the top.
const MAX_ROWS = 20000;
const PAGE_SIZE = 200;
// How close (px below the viewport) the "Load more" button is when the next
// page is fetched.
const NEAR_PX = 1200;
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
  // Expanded rows (by _id; they stay expanded while scrolled away) and rows
  // just streamed in by the live tail (highlighted for a moment).
  const openIds = new Set();
  const liveIds = new Set();
  const pinnedIds = new Set();  // fetched for a link, not of the search
  // True while this list itself writes state.hit (an expansion by click).
  let settingHit = false;

  const rows = createVirtualList(list, {
    key: (hit) => text(hit?._id),
    row(hit) {
      const id = text(hit?._id);
      const li = hitRow(hit, onToggle);
      if (liveIds.has(id)) li.classList.add("live");
      if (pinnedIds.has(id)) li.classList.add("pinned");
      if (openIds.has(id)) {
        const details = li.querySelector("details");
        details.append(hitDetail(hit, ctx));
        details.open = true;
        li.classList.add("open");
      }
      return li;
    },
  });

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
    openIds.clear();
    pinnedIds.clear();
    rows.setItems([]);
    show(result, state, () => search(store.get()));
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
    if (!result.ok) {
      // No automatic retry of a failed page: the button stays hidden (it
      // would be "near" again at once) until the notice's Retry.
      more.hidden = true;
      show(result, state, () => {
        hideNotice();
        more.hidden = false;
        loadMore();
      });
      return;
    }
    show(result, state);
    // The observer reports changes only: a page that left the button near
    // the viewport (or one that arrived while another was loading) goes on.
    if (moreIsNear()) loadMore();
  }

  function moreIsNear() {
    return !more.hidden && more.getBoundingClientRect().top < innerHeight + NEAR_PX;
  }

  // `retry`: what the error notice's Retry (and a 429's timer) runs.
  function show(result, state, retry) {
    if (result.status === 401) {
      rows.setItems([]);
      return;  // the key form is open (key_prompt.js)
    }
    if (!result.ok) {
      showError(result, state, retry);
      return;
    }
    const hits = Array.isArray(result.body?.hits) ? result.body.hits : [];
    rows.append(hits.filter((hit) => rows.indexOf(text(hit?._id)) < 0));
    view.shown = rows.items.length;
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

  function showError(result, state, retryFn) {
    const retry = ["Retry", retryFn];
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
      clearTimeout(retryTimer);
      retryTimer = setTimeout(() => { if (view.key === key) retryFn(); }, seconds * 1000);
    } else {
      showNotice("error", `The search failed (HTTP ${result.status})`, errorReason(result), [retry]);
    }
  }

  // -- the expanded hit -----------------------------------------------------

  function onToggle(details, hit) {
    const id = text(hit?._id);
    const li = details.parentElement;
    li.classList.toggle("open", details.open);
    if (details.open) {
      if (!details.querySelector(".hit-detail")) details.append(hitDetail(hit, ctx));
      if (!openIds.has(id)) {
        openIds.add(id);
        writeHit(id);
      }
    } else {
      openIds.delete(id);
      if (store.get().hit === id) writeHit("");
    }
    rows.schedule();  // its height changed
  }

  function writeHit(id) {
    settingHit = true;
    try {
      store.set({ hit: id });
    } finally {
      settingHit = false;
    }
  }

  // Shows state.hit expanded (a link, back/forward): scrolled to, fetched by
  // its _id and pinned on top when it is not among the loaded hits.
  async function openSelected(state) {
    openIds.clear();
    if (state.hit) openIds.add(state.hit);
    for (const li of list.children) {
      const details = li.querySelector("details");
      if (details && details.open !== openIds.has(li.dataset.id)) details.open = openIds.has(li.dataset.id);
    }
    if (!state.hit) return;
    if (rows.indexOf(state.hit) < 0) {
      const key = view.key;
      const q = `_id:${state.hit.replace(/[^0-9A-Za-z_-]/g, "")}`;
      const result = await api.get("api/v1/search", { q, limit: 1 });
      const hit = result?.ok ? result.body?.hits?.[0] : null;
      if (!hit || view.key !== key || rows.indexOf(state.hit) >= 0) return;
      pinnedIds.add(state.hit);
      rows.prepend([hit]);
    }
    const header = document.querySelector("header")?.getBoundingClientRect().height ?? 0;
    rows.scrollToIndex(rows.indexOf(state.hit), header + 8);
  }

  list.addEventListener("keydown", (event) => {
    const summary = event.target.closest?.("summary");
    if (summary && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      const li = summary.closest("li");
      const next = event.key === "ArrowDown" ? li.nextElementSibling : li.previousElementSibling;
      const target = next?.querySelector("summary");
      if (target) {
        target.focus();
        target.scrollIntoView({ block: "nearest" });
        event.preventDefault();
      }
      return;
    }
    if (event.key !== "Escape") return;
    const details = event.target.closest?.("details[open]");
    if (!details) return;
    details.open = false;
    details.querySelector("summary").focus();
    event.preventDefault();
  });

  let lastLiveStatus = 0;
  insertLive = (hits) => {
    const fresh = hits.filter((hit) => rows.indexOf(text(hit?._id)) < 0).reverse();
    if (!fresh.length) return;
    if (!notice.hidden && notice.classList.contains("notice-empty")) hideNotice();
    for (const hit of fresh) liveIds.add(text(hit?._id));
    rows.prepend(fresh);
    setTimeout(() => { for (const hit of fresh) liveIds.delete(text(hit?._id)); }, 2500);
    // A tail left running must not grow the page without bound: past the
    // cap the oldest rows go, and paging on from the old cursor would leave
    // a gap, so it stops there.
    if (rows.items.length > MAX_ROWS) {
      rows.truncate(MAX_ROWS);
      view.cursor = null;
      more.hidden = true;
    }
    view.shown = rows.items.length;
    // #status is announced to screen readers: not at the tail's pace.
    const now = Date.now();
    if (now - lastLiveStatus > 5000) {
      lastLiveStatus = now;
      setStatus(summary(view.body, view.shown));
    }
  };

  more.addEventListener("click", loadMore);
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadMore();
  }, { rootMargin: `${NEAR_PX}px 0px` }).observe(more);
  // A scroll to the end that lands before any frame has seen a just
  // appended page push the button away is no transition for the observer
  // (it was near, it is near), so each scroll checks as well.
  addEventListener("scroll", () => {
    if (moreIsNear()) loadMore();
  }, { passive: true });
  store.subscribe((state, changed) => {
    if (isNewSearch(changed)) search(state);
    else if (changed.has("hit") && !settingHit) openSelected(state);
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
