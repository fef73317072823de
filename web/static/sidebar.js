// The field sidebar (#sidebar): the fields of the current results and their
// most common values, from /api/v1/fields over the newest SAMPLE hits (it
// says so). Per value: filter for it (field:value added to the query) or
// out (NOT field:value); per field: split the histogram by it, and for
// numeric fields chart its average over time. Fields are collapsible
// <details> (open ones stay open across searches); a filter box narrows the
// list. Buttons and summaries are all keyboard reachable. Field names and
// values come from log data: textContent only.
import { errorReason } from "./api.js";
import { addClause, filterClause, typedValue } from "./query_text.js";
import { isNewSearch, queryParams } from "./store.js";

const SAMPLE = 500;
const TOP = 5;
const OPEN_BY_DEFAULT = 4;
// Fields every event has or that make no sense as facets.
const SKIP = new Set(["@timestamp", "_id"]);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(className, text, title, onClick) {
  const b = el("button", className, text);
  b.type = "button";
  if (title) {
    b.title = title;
    b.setAttribute("aria-label", title);
  }
  b.addEventListener("click", onClick);
  return b;
}

// The fields worth opening before anyone asks: a few values shared by many
// hits (host, level, user), not ids or measurements; none on a narrow
// screen, where the sidebar sits above the results.
function facetFields(fields) {
  if (matchMedia("(max-width: 900px)").matches) return new Set();
  const facets = fields.filter((f) => f.distinct > 1 && f.distinct <= 50 && (f.ratio ?? 0) >= 0.2 &&
                                      !(f.types?.length === 1 && f.types[0] === "number"));
  return new Set(facets.slice(0, OPEN_BY_DEFAULT).map((f) => f.field));
}

export function mountSidebar({ api, store, colors }) {
  const aside = document.getElementById("sidebar");
  const heading = el("h2", "sidebar-title", "Fields");
  const filter = el("input", "sidebar-filter");
  filter.type = "search";
  filter.placeholder = "Find a field";
  filter.setAttribute("aria-label", "Find a field");
  const note = el("p", "sidebar-note");
  note.setAttribute("aria-live", "polite");
  const list = el("ul", "field-list");
  aside.append(heading, filter, note, list);

  const opened = new Set();  // fields the user opened (or left open)
  const closed = new Set();  // ... or closed
  let fields = [];
  let openByDefault = new Set();
  let controller = null;

  async function load(state) {
    controller?.abort();
    controller = new AbortController();
    const my = controller;
    aside.setAttribute("aria-busy", "true");
    aside.classList.add("loading");
    if (!fields.length) note.textContent = "Loading fields…";
    const result = await api.get("api/v1/fields", { ...queryParams(state), top: TOP, sample: SAMPLE },
                                 { signal: my.signal });
    if (!result || controller !== my) return;
    aside.removeAttribute("aria-busy");
    aside.classList.remove("loading");
    if (!result.ok) {
      fields = [];
      list.replaceChildren();
      note.textContent = result.status === 400 || result.status === 401
        ? "" : `Fields unavailable: ${errorReason(result)}`;
      return;
    }
    const body = result.body ?? {};
    fields = (Array.isArray(body.fields) ? body.fields : []).filter((f) => !SKIP.has(f.field));
    const n = Number(body.sample_size ?? 0);
    note.textContent = n === 0 ? "No hits, no fields."
      : body.sampled ? `From the newest ${n.toLocaleString()} hits.`
        : `From all ${n.toLocaleString()} hits.`;
    render();
  }

  function render() {
    const state = store.get();
    const needle = filter.value.trim().toLowerCase();
    const shownFields = fields.filter((f) => !needle || f.field.toLowerCase().includes(needle));
    // Re-rendering replaces the buttons: keep the keyboard focus where it was.
    const focused = aside.contains(document.activeElement) ? document.activeElement.dataset.focus : null;
    openByDefault = facetFields(fields);
    list.replaceChildren(...shownFields.map((f) => fieldItem(f, state)));
    if (needle && !shownFields.length) list.append(el("li", "field-none", "No field matches."));
    if (focused) {
      [...list.querySelectorAll("[data-focus]")].find((n) => n.dataset.focus === focused)?.focus();
    }
  }

  // The histogram decides the colours of a split's values (colors.assign).
  function recolour() {
    for (const swatch of list.querySelectorAll(".swatch[data-value]")) {
      swatch.style.background = colors.seriesColor(swatch.dataset.value);
    }
  }

  function fieldItem(f, state) {
    const item = el("li", "field");
    item.dataset.field = f.field;
    const details = el("details");
    details.open = opened.has(f.field) || (!closed.has(f.field) && openByDefault.has(f.field));
    details.addEventListener("toggle", () => {
      (details.open ? opened : closed).add(f.field);
      (details.open ? closed : opened).delete(f.field);
    });
    const summary = el("summary", "field-name");
    summary.dataset.focus = `summary\u001f${f.field}`;
    summary.append(el("span", "field-label", f.field),
                   el("span", "field-count", `${Math.round((f.ratio ?? 0) * 100)}%`));
    summary.title = `${f.field}: in ${f.count} of the sampled hits, ${f.distinct}` +
                    `${f.distinct_exact === false ? "+" : ""} distinct values`;
    const values = el("ol", "field-values");
    const max = Math.max(1, ...f.top.map((v) => v.count));
    for (const v of f.top) values.append(valueItem(f, v, max, state));
    const actions = el("div", "field-actions");
    const split = button("chip-button", state.by === f.field ? "Split ✓" : "Split histogram",
                         `Split the histogram by ${f.field}`,
                         () => store.set({ by: state.by === f.field ? "" : f.field }, { push: true }));
    split.setAttribute("aria-pressed", String(state.by === f.field));
    split.dataset.focus = `split\u001f${f.field}`;
    actions.append(split);
    if (Array.isArray(f.types) && f.types.includes("number")) {
      const avg = `avg:${f.field}`;
      const on = state.value === avg;
      const average = button("chip-button", on ? "Average ✓" : "Average over time",
                             `Chart the average of ${f.field} over time`,
                             () => store.set({ value: on ? "" : avg }, { push: true }));
      average.setAttribute("aria-pressed", String(on));
      average.dataset.focus = `avg\u001f${f.field}`;
      actions.append(average);
    }
    details.append(summary, values, actions);
    item.append(details);
    return item;
  }

  function valueItem(f, v, max, state) {
    const row = el("li", "field-value");
    const add = (negate) => () => {
      const value = typedValue(v.value, f.types ?? []);
      const q = addClause(store.get().q, filterClause(f.field, value, { negate }));
      store.set({ q }, { push: true });
    };
    const label = v.value === "" ? "(empty)" : v.value;
    const include = button("value-include", "", `Filter for ${f.field}: ${label}`, add(false));
    include.removeAttribute("aria-label");
    if (state.by === f.field) {
      const swatch = el("span", "swatch");
      swatch.dataset.value = v.value;
      swatch.style.background = colors.seriesColor(v.value);
      include.append(swatch);
    }
    const bar = el("span", "value-bar");
    bar.style.width = `${(v.count / max) * 100}%`;
    include.append(el("span", "value-text", label), el("span", "value-count", v.count.toLocaleString()),
                   bar);
    include.dataset.focus = `in\u001f${f.field}\u001f${v.value}`;
    const exclude = button("value-exclude", "−", `Filter out ${f.field}: ${label}`, add(true));
    exclude.dataset.focus = `out\u001f${f.field}\u001f${v.value}`;
    row.append(include, exclude);
    return row;
  }

  filter.addEventListener("input", render);
  colors.onAssign(recolour);
  store.subscribe((state, changed) => {
    if (isNewSearch(changed)) load(state);
    else if (changed.has("by") || changed.has("value")) render();
  });
  load(store.get());
}
