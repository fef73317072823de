// The insights panel (#insights): the incidents of the current search
// (GET /api/v1/insights with its q/from/to, {incidents: [...]}, newest
// first), one compact card each: severity, title, count, first/last seen,
// where (hosts, ranks, GPUs), the explanation and fixes (collapsed), "First
// event in context" (ctx.openContext on the incident's first event: the
// context dialog needs only its _id), "Run's curves" (the Runs view on its
// run) and the run's external record.
//
// Hidden while there is nothing to show: no incidents, or a server without
// the endpoint (a 404 stops the asking until a reload); another error is a
// one-line note with a retry.
// ctx.setInsights(nodes) shows the section with those nodes (null/[] hides
// it). Everything in a card comes from log data: textContent only.
import { errorReason, text } from "./api.js";
import { formatTime, utcTitle } from "./hit_row.js";
import { isNewSearch, queryParams } from "./store.js";

const SHOWN = 4;  // cards before "Show all"

export function el(tag, className, content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined) node.textContent = content;
  return node;
}

export function timeCell(className, t) {
  const node = el("time", className, formatTime(t));
  node.dateTime = text(t);
  node.title = utcTitle(t);
  return node;
}

// "8 hosts" or the one host itself.
function counted(list, one, many) {
  const items = Array.isArray(list) ? list.map(text) : [];
  if (items.length === 0) return null;
  return items.length === 1 ? `${one} ${items[0]}` : `${items.length} ${many}`;
}

// A link out of dashcam (a run's experiment record), when it is http(s).
export function externalLink(href, label) {
  const url = text(href);
  if (!/^https?:\/\//i.test(url)) return null;
  const a = el("a", "run-link", label);
  a.href = url;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

function card(incident, ctx) {
  const severity = ["critical", "error", "warning"].includes(incident.severity) ? incident.severity : "warning";
  const li = el("li", `incident sev-${severity}`);
  const head = el("div", "incident-head");
  head.append(el("span", "incident-severity", severity),
              el("span", "incident-title", text(incident.title) || text(incident.kind)),
              el("span", "incident-count", `×${Number(incident.count) || 1}`));
  const meta = el("div", "incident-meta");
  const where = [counted(incident.hosts, "", "hosts"), counted(incident.users, "user", "users"),
                 counted(incident.ranks, "rank", "ranks"), counted(incident.gpus, "GPU", "GPUs"),
                 incident.run_id ? `run ${text(incident.run_id)}` : null]
    .filter(Boolean).map((s) => s.trim());
  meta.append(timeCell("time", incident.first_seen));
  if (incident.last_seen && incident.last_seen !== incident.first_seen) {
    meta.append(" – ", timeCell("time", incident.last_seen));
  }
  if (where.length) meta.append(el("span", "incident-where", where.join(" · ")));
  li.append(head, meta);

  const fixes = Array.isArray(incident.fixes) ? incident.fixes.map(text).filter(Boolean) : [];
  if (incident.explanation || fixes.length) {
    const details = el("details", "incident-why");
    details.append(el("summary", "", fixes.length ? "Why, and what to try" : "Why"));
    if (incident.explanation) details.append(el("p", "", text(incident.explanation)));
    if (fixes.length) {
      const ul = el("ul", "incident-fixes");
      ul.append(...fixes.map((f) => el("li", "", f)));
      details.append(ul);
    }
    li.append(details);
  }

  const actions = el("div", "incident-actions");
  const first = incident.first_event;
  if (first?.id) {
    const open = el("button", "chip-button incident-context", "First event in context");
    open.type = "button";
    open.title = text(first.message);
    open.addEventListener("click", () => ctx.openContext?.({ _id: text(first.id), _index: first._index }));
    actions.append(open);
  }
  if (incident.run_id != null && text(incident.run_id)) {
    const show = el("button", "chip-button incident-run", "Run's curves");
    show.type = "button";
    show.title = `Open run ${text(incident.run_id)} in the Runs view`;
    show.addEventListener("click", () => ctx.store.set({ view: "runs", run: text(incident.run_id) }, { push: true }));
    actions.append(show);
  }
  const link = externalLink(incident.run_link, "Run record ↗");
  if (link) actions.append(link);
  if (actions.childElementCount) li.append(actions);
  return li;
}

export function mountInsights(ctx) {
  const { api, store } = ctx;
  const section = document.getElementById("insights");

  function setInsights(nodes) {
    const list = Array.isArray(nodes) ? nodes : nodes ? [nodes] : [];
    section.replaceChildren(...list);
    section.hidden = list.length === 0;
  }
  ctx.setInsights = setInsights;

  function render(incidents) {
    if (!incidents.length) return setInsights(null);
    const heading = el("h2", "insights-title", `Incidents (${incidents.length})`);
    const list = el("ol", "incidents");
    list.append(...incidents.map((i) => card(i, ctx)));
    const nodes = [heading, list];
    if (incidents.length > SHOWN) {
      list.classList.add("collapsed");
      const all = el("button", "chip-button incidents-all", `Show all ${incidents.length}`);
      all.type = "button";
      all.addEventListener("click", () => {
        list.classList.remove("collapsed");
        all.remove();
      });
      nodes.push(all);
    }
    setInsights(nodes);
  }

  let controller = null;
  let available = true;
  async function load(state) {
    controller?.abort();
    controller = new AbortController();
    const my = controller;
    const result = await api.get("api/v1/insights", queryParams(state), { signal: my.signal });
    if (!result || controller !== my) return;
    if (result.status === 404) available = false;
    const incidents = result.body?.incidents;
    if (result.status === 404 || result.status === 401) {
      if (result.status === 404) setInsights(null);
      return;
    }
    if (!result.ok || !Array.isArray(incidents)) {
      // Say so (a timeout on a wide range, say): an empty panel would read
      // as "no incidents".
      const note = el("p", "view-state error", `Incidents unavailable: ${errorReason(result)} `);
      const retry = el("button", "chip-button", "Retry");
      retry.type = "button";
      retry.addEventListener("click", () => load(store.get()));
      note.append(retry);
      setInsights(note);
      return;
    }
    // Newest first, as the contract says (kept here too: the order is the point).
    const byTime = (i) => Date.parse(i.first_seen) || 0;
    render(incidents.filter((i) => i && typeof i === "object").sort((a, b) => byTime(b) - byTime(a)));
  }
  store.subscribe((state, changed) => {
    if (available && isNewSearch(changed)) load(state);
  });
  load(store.get());
}
