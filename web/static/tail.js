// Live tail (#live): a toggle that streams /api/v1/tail for the current
// query and puts each new matching event on top of the hits list
// (hits.js insertLiveHits). The stream is read with api.stream (fetch, so
// the API key header goes with it; EventSource cannot send one) and parsed
// as Server-Sent Events here: `data:` lines hold one hit as JSON,
// `event: end` ends the tail with a reason, `:` lines are comments
// (heartbeats).
//
// Scrolling down pauses the insertion (the user is reading): new events are
// counted and kept, and "paused — N new, resume" puts them on top. The rate
// shown is events per second over the last 5 s. Turning the toggle off or a
// new search aborts the stream (a new search starts a new one).
import { errorReason } from "./api.js";
import { insertLiveHits } from "./hits.js";
import { isNewSearch } from "./store.js";

const RATE_WINDOW_MS = 5000;
const MAX_BUFFERED = 5000;
const RECONNECT_MS = 5000;
const PAUSE_SCROLL_PX = 60;

// Splits SSE text into events; returns [events, the unfinished rest].
// An event is {event, data, id}; comments are left out.
export function parseSse(buffer) {
  const events = [];
  const blocks = buffer.replace(/\r\n?/g, "\n").split("\n\n");
  const rest = blocks.pop();
  for (const block of blocks) {
    const e = { event: "message", data: [], id: "" };
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") e.data.push(value);
      else if (field === "event") e.event = value;
      else if (field === "id") e.id = value;
    }
    if (e.data.length) events.push({ ...e, data: e.data.join("\n") });
  }
  return [events, rest];
}

function el(tag, props = {}) {
  return Object.assign(document.createElement(tag), props);
}

export function mountTail({ api, store }) {
  const root = document.getElementById("live");
  const toggle = el("button", { type: "button", className: "tail-toggle", textContent: "Live tail" });
  toggle.setAttribute("aria-pressed", "false");
  toggle.title = "Stream new matching events onto the top of the list";
  const rate = el("span", { className: "tail-rate" });
  rate.setAttribute("aria-live", "off");
  const resume = el("button", { type: "button", className: "tail-resume", hidden: true });
  const state = el("span", { className: "tail-state" });
  state.setAttribute("role", "status");
  root.append(toggle, rate, resume, state);

  let on = false;
  let controller = null;
  let paused = false;
  let buffered = [];
  let pending = [];
  let arrivals = [];
  let reconnect = null;
  let flushQueued = false;

  const flush = () => {
    flushQueued = false;
    if (paused || !pending.length) return;
    insertLiveHits(pending);
    pending = [];
  };
  const receive = (hit) => {
    arrivals.push(performance.now());
    if (paused) {
      buffered.push(hit);
      if (buffered.length > MAX_BUFFERED) buffered.shift();
      resume.textContent = `paused — ${buffered.length} new, resume`;
      resume.hidden = false;
      return;
    }
    pending.push(hit);
    if (!flushQueued) {
      flushQueued = true;
      requestAnimationFrame(flush);
    }
  };

  async function connect() {
    controller?.abort();
    clearTimeout(reconnect);
    const mine = new AbortController();
    controller = mine;
    const s = store.get();
    const params = { q: s.q, from: s.from.startsWith("now") ? s.from : "", to: s.to === "now" ? "" : s.to };
    state.textContent = "connecting…";
    try {
      const response = await api.stream("api/v1/tail", params, { signal: mine.signal });
      if (!response.ok) {
        const body = await response.json().catch(() => null);
        const result = { status: response.status, body, retryAfter: response.headers.get("Retry-After") };
        stop(`tail failed: ${errorReason(result)}`);
        return;
      }
      state.textContent = "live";
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        // A read that completed just as a new search aborted this stream
        // must not add the old query's events to the new results.
        if (controller !== mine) return;
        if (done) break;
        let events;
        [events, buffer] = parseSse(buffer + value);
        for (const e of events) {
          if (e.event === "end") {
            let reason = "";
            try { reason = JSON.parse(e.data).reason; } catch { reason = e.data; }
            stop(`tail ended: ${reason}`);
            return;
          }
          try { receive(JSON.parse(e.data)); } catch { /* not a hit: skip it */ }
        }
      }
      if (controller === mine) retryLater("the stream closed");
    } catch (e) {
      if (e.name === "AbortError" || controller !== mine) return;
      retryLater(e.message);
    }
  }

  function retryLater(why) {
    state.textContent = `disconnected (${why}); reconnecting…`;
    reconnect = setTimeout(() => { if (on) connect(); }, RECONNECT_MS);
  }

  function start() {
    on = true;
    toggle.setAttribute("aria-pressed", "true");
    toggle.classList.add("on");
    paused = false;
    arrivals = [];
    connect();
  }

  function stop(message = "") {
    on = false;
    controller?.abort();
    controller = null;
    clearTimeout(reconnect);
    toggle.setAttribute("aria-pressed", "false");
    toggle.classList.remove("on");
    flush();
    if (buffered.length) insertLiveHits(buffered);
    buffered = [];
    paused = false;
    resume.hidden = true;
    rate.textContent = "";
    state.textContent = message;
  }

  function doResume() {
    paused = false;
    resume.hidden = true;
    window.scrollTo({ top: 0 });
    const hits = buffered;
    buffered = [];
    insertLiveHits(hits);
    flush();
  }

  toggle.addEventListener("click", () => (on ? stop() : start()));
  resume.addEventListener("click", doResume);
  window.addEventListener("scroll", () => {
    if (!on) return;
    if (!paused && window.scrollY > PAUSE_SCROLL_PX) {
      paused = true;
      resume.textContent = "paused — 0 new, resume";
      resume.hidden = false;
    } else if (paused && window.scrollY === 0) {
      doResume();
    }
  }, { passive: true });
  setInterval(() => {
    if (!on) return;
    const now = performance.now();
    arrivals = arrivals.filter((t) => now - t < RATE_WINDOW_MS);
    const perSecond = arrivals.length / (RATE_WINDOW_MS / 1000);
    rate.textContent = `${perSecond < 10 ? perSecond.toFixed(1) : Math.round(perSecond)} ev/s`;
  }, 1000);
  store.subscribe((s, changed) => {
    if (!on || !isNewSearch(changed)) return;
    buffered = [];
    pending = [];
    resume.hidden = true;
    paused = false;
    connect();
  });
}
