// The context dialog (#context-dialog): ctx.openContext(hit) shows the lines
// logged just before and after `hit` by the same source (/api/v1/context,
// oldest first, like `grep -C`), the hit itself marked and scrolled into
// view. "More before"/"More after" ask again for more lines on that side
// (the API answers up to 1000 a side). Escape or Close closes it, and the
// focus goes back to what opened it. Lines come from log data: textContent
// only.
import { errorReason, text } from "./api.js";
import { levelName } from "./colors.js";
import { formatTime } from "./hit_row.js";

const STEP = 25;
const MAX = 1000;  // the API's limit per side

function el(tag, className, content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined) node.textContent = content;
  return node;
}

export function mountContext(ctx) {
  const { api } = ctx;
  const dialog = document.getElementById("context-dialog");
  const title = el("h2", "context-title", "Context");
  title.id = "context-title";
  dialog.removeAttribute("aria-label");
  dialog.setAttribute("aria-labelledby", title.id);
  const scope = el("p", "context-scope");
  const close = el("button", "chip-button context-close", "Close");
  close.type = "button";
  const head = el("div", "context-head");
  head.append(title, close);
  const moreBefore = el("button", "chip-button context-more", "More before");
  const moreAfter = el("button", "chip-button context-more", "More after");
  moreBefore.type = moreAfter.type = "button";
  const lines = el("ol", "context-lines");
  const status = el("p", "context-status");
  status.setAttribute("aria-live", "polite");
  dialog.append(head, scope, moreBefore, lines, moreAfter, status);

  let view = null;  // {id, before, after, opener, controller}

  async function load(scrollTo) {
    view.controller?.abort();
    const controller = new AbortController();
    view.controller = controller;
    const current = view;
    status.textContent = "Loading…";
    moreBefore.disabled = moreAfter.disabled = true;
    const result = await api.get("api/v1/context",
                                 { id: current.id, before: current.before, after: current.after },
                                 { signal: controller.signal });
    if (!result || view !== current || current.controller !== controller) return;
    if (!result.ok) {
      status.textContent = result.status === 404
        ? "This event is no longer stored." : `Context unavailable: ${errorReason(result)}`;
      return;
    }
    show(result.body ?? {}, scrollTo);
  }

  function show(body, scrollTo) {
    const events = Array.isArray(body.events) ? body.events : [];
    const parts = (Array.isArray(body.scope) ? body.scope : [])
      .filter((s) => s.value !== null && s.value !== undefined)
      .map((s) => `${s.field}: ${Array.isArray(s.value) ? s.value.join(", ") : s.value}`);
    scope.textContent = parts.length ? `Same source: ${parts.join(" · ")}` : "Neighbours in time";
    const rows = events.map(line);
    lines.replaceChildren(...rows);
    moreBefore.hidden = !body.has_more_before;
    moreAfter.hidden = !body.has_more_after;
    moreBefore.disabled = moreAfter.disabled = false;
    moreBefore.disabled = view.before >= MAX;
    moreAfter.disabled = view.after >= MAX;
    const anchorIndex = events.findIndex((e) => e.anchor);
    status.textContent = `${anchorIndex} before, ${Math.max(0, events.length - anchorIndex - 1)} after`;
    // Keep the line the reader was looking at where it was.
    const target = scrollTo === "anchor" ? rows[anchorIndex]
      : scrollTo === "before" ? rows[Math.max(0, anchorIndex - view.prevBefore)]
        : rows[Math.min(rows.length - 1, anchorIndex + view.prevAfter)];
    target?.scrollIntoView({ block: { anchor: "center", before: "start", after: "end" }[scrollTo] });
  }

  function line(event) {
    const src = event._source ?? {};
    const level = text(src.log?.level ?? src.level);
    const row = el("li", event.anchor ? "context-line anchor" : "context-line");
    if (event.anchor) row.setAttribute("aria-current", "true");
    const time = el("span", "time", formatTime(event["@timestamp"] ?? src["@timestamp"]));
    time.title = text(event["@timestamp"]);
    const lvl = el("span", `level lvl-${levelName(level)}`, level);
    row.append(time, lvl, el("span", "message", text(src.message ?? src.msg)));
    return row;
  }

  function open(hit) {
    const id = hit?._id;
    if (!id) return;
    const opener = document.activeElement;
    view?.controller?.abort();
    view = { id, before: STEP, after: STEP, prevBefore: 0, prevAfter: 0, opener, controller: null };
    lines.replaceChildren();
    scope.textContent = "";
    moreBefore.hidden = moreAfter.hidden = true;
    if (!dialog.open) dialog.showModal();
    close.focus();
    load("anchor");
  }

  moreBefore.addEventListener("click", () => {
    view.prevBefore = view.before;
    view.before = Math.min(MAX, view.before * 2);
    load("before");
  });
  moreAfter.addEventListener("click", () => {
    view.prevAfter = view.after;
    view.after = Math.min(MAX, view.after * 2);
    load("after");
  });
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    view?.controller?.abort();
    const opener = view?.opener;
    view = null;
    if (opener?.isConnected) opener.focus();
  });

  ctx.openContext = open;
}
