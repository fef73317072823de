// The histogram (#histogram): hits of the current search over its time range
// from /api/v1/histogram, as SVG.
//
//   counts, stacked by level           (state.by = "", state.value = "")
//   counts, stacked by a field's top 10 values + other + missing (state.by)
//   a numeric field's aggregate as lines (state.value, e.g. "avg:gpu_util"),
//     one per value of state.by when set
//
// Each series is one <path> (a bar is a subpath), so thousands of buckets
// cost a handful of DOM nodes. Hover shows the bucket's time and counts in a
// text-only tooltip; dragging across the plot zooms the range (pushed to
// history, so Back undoes it); clicking a legend entry of a field split adds
// field:value to the query. Redrawn at the element's pixel width
// (ResizeObserver) and on theme changes; every value from the data reaches
// the page as textContent. Keyboard: the plot is focusable; arrows walk the
// buckets (tooltip), Enter zooms into one, "Zoom out" widens the range.
import { errorReason } from "./api.js";
import { countTicks, rangeLabel, shortNumber, timeTicks } from "./chart_axes.js";
import { MISSING, OTHER } from "./colors.js";
import { addClause, filterClause, typedValue } from "./query_text.js";
import { isNewSearch, queryParams } from "./store.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const HEIGHT = 150;
const PAD = { left: 46, right: 10, top: 8, bottom: 22 };
const DRAG_MIN_PX = 4;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

// The series of an answer: [{key, label, pick(bucket) -> {count, value}}].
function seriesOf(body) {
  if (!Array.isArray(body.keys)) return [{ key: "hits", label: "hits", pick: (b) => b }];
  const series = body.keys.map((k) => ({ key: k, label: k, pick: (b) => b.by?.[k] }));
  const some = (name) => body.buckets.some((b) => b[name]?.count > 0);
  if (some("other")) series.push({ key: OTHER, label: "other", pick: (b) => b.other });
  if (some("missing")) series.push({ key: MISSING, label: "(missing)", pick: (b) => b.missing });
  return series;
}

export function mountHistogram({ api, store, colors }) {
  const section = document.getElementById("histogram");
  const head = el("div", "histogram-head");
  const title = el("h2", "histogram-title", "Hits over time");
  const mode = el("span", "histogram-mode");
  const zoomOut = el("button", "chip-button", "Zoom out");
  zoomOut.type = "button";
  zoomOut.title = "Double the time range around its middle";
  head.append(title, mode, zoomOut);
  const legend = el("ul", "histogram-legend");
  legend.setAttribute("aria-label", "Series");
  const plot = el("div", "histogram-plot");
  const chart = svg("svg", { height: HEIGHT, role: "img" });
  const tooltip = el("div", "histogram-tooltip");
  tooltip.hidden = true;
  tooltip.setAttribute("role", "status");
  const message = el("p", "histogram-message");
  plot.append(chart, tooltip, message);
  section.append(head, plot, legend);

  let shown = null;  // {body, state, series, colorOf}: what is drawn
  let controller = null;
  let width = 0;
  let geometry = null;  // pixel mapping of the last draw

  async function load(state) {
    controller?.abort();
    controller = new AbortController();
    const my = controller;
    const params = { ...queryParams(state), interval: "auto" };
    if (state.value) params.value = state.value;
    if (state.by) params.by = state.by;
    else if (!state.value) params.by = "level";
    section.setAttribute("aria-busy", "true");
    section.classList.add("loading");
    if (!shown) showMessage("Loading…");
    const result = await api.get("api/v1/histogram", params, { signal: my.signal });
    if (!result || controller !== my) return;
    section.removeAttribute("aria-busy");
    section.classList.remove("loading");
    if (!result.ok) {
      shown = null;
      legend.replaceChildren();
      // A bad query is explained under the query bar (hits.js); 401 opens the key form.
      const quiet = result.status === 400 || result.status === 401;
      showMessage(quiet ? "" : `Histogram unavailable: ${errorReason(result)}`);
      return;
    }
    const body = result.body;
    body.buckets = Array.isArray(body.buckets) ? body.buckets : [];
    const series = seriesOf(body);
    const byLevel = params.by === "level";
    if (!byLevel) colors.assign(series.map((s) => s.key));
    const colorOf = (key) => (byLevel && key !== OTHER && key !== MISSING
      ? colors.levelColor(key) : colors.seriesColor(key));
    shown = { body, state, series, colorOf, byLevel };
    describe();
    draw();
  }

  function showMessage(text) {
    message.textContent = text;
    message.hidden = !text;
    chart.style.visibility = text ? "hidden" : "";
  }

  // The header's words for the current mode, the legend, the data- summary.
  function describe() {
    const { body, state, series, colorOf, byLevel } = shown;
    const sum = body.buckets.reduce((n, b) => n + (b.count ?? 0), 0);
    section.dataset.total = String(sum);
    const what = state.value ? `${state.value}` : "Hits";
    const split = byLevel ? "by level" : state.by ? `by ${state.by}` : "";
    title.textContent = `${what} over time`;
    mode.replaceChildren(`per ${body.interval ?? "?"}${split ? `, ${split}` : ""}`);
    for (const [key, label] of [["by", "split"], ["value", "average"]]) {
      if (!state[key]) continue;
      const clear = el("button", "chip-button", `× ${label}`);
      clear.type = "button";
      clear.title = key === "by" ? `Stop splitting by ${state.by}` : "Show counts again";
      clear.addEventListener("click", () => store.set({ [key]: "" }, { push: true }));
      mode.append(" ", clear);
    }
    legend.replaceChildren(...(series.length > 1 || state.by ? series.map(legendItem) : []));
    function legendItem(s) {
      const total = body.buckets.reduce((n, b) => n + (s.pick(b)?.count ?? 0), 0);
      const item = el("li");
      const filterable = state.by && s.key !== OTHER && s.key !== MISSING;
      const entry = el(filterable ? "button" : "span", "legend-entry");
      if (filterable) {
        entry.type = "button";
        entry.title = `Filter for ${state.by}: ${s.label}`;
        entry.addEventListener("click", () => {
          const q = addClause(store.get().q, filterClause(state.by, typedValue(s.key)));
          store.set({ q }, { push: true });
        });
      }
      const swatch = el("span", "swatch");
      swatch.style.background = colorOf(s.key);
      entry.append(swatch, el("span", "legend-label", s.label),
                   el("span", "legend-count", total.toLocaleString()));
      item.append(entry);
      return item;
    }
    if (sum === 0 && !state.value) showMessage("No hits in this range — widen it?");
    else showMessage("");
  }

  function draw() {
    chart.replaceChildren();
    if (!shown || width <= PAD.left + PAD.right) return;
    const { body, state, series, colorOf } = shown;
    const from = body.from, to = body.to, step = body.interval_ms;
    chart.setAttribute("width", width);
    chart.setAttribute("viewBox", `0 0 ${width} ${HEIGHT}`);
    const x0 = PAD.left, x1 = width - PAD.right, y0 = HEIGHT - PAD.bottom, y1 = PAD.top;
    const xOf = (t) => x0 + ((t - from) / Math.max(1, to - from)) * (x1 - x0);
    const tOf = (x) => from + ((x - x0) / (x1 - x0)) * (to - from);
    geometry = { x0, x1, y0, y1, xOf, tOf, from, to, step };

    const values = state.value;
    let lo = 0, hi = 0;
    for (const b of body.buckets) {
      if (!values) hi = Math.max(hi, b.count ?? 0);
      else for (const s of series) {
        const v = s.pick(b)?.value;
        if (typeof v === "number") { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      }
    }
    const yt = countTicks(hi - lo, 4, { integer: !values });
    const top = lo + yt.top;
    const yOf = (v) => y0 - ((v - lo) / Math.max(1e-9, top - lo)) * (y0 - y1);

    const grid = [];
    const labels = svg("g", { class: "axis-labels" });
    for (const v of yt.ticks) {
      const y = Math.round(yOf(lo + v)) + 0.5;
      grid.push(`M${x0} ${y}H${x1}`);
      const label = svg("text", { x: x0 - 6, y: y + 4, "text-anchor": "end" });
      label.textContent = shortNumber(lo + v);
      labels.append(label);
    }
    for (const tick of timeTicks(from, to, Math.max(2, Math.floor((x1 - x0) / 90)))) {
      const x = Math.round(xOf(tick.t)) + 0.5;
      grid.push(`M${x} ${y0}v4`);
      const label = svg("text", { x, y: HEIGHT - 6, "text-anchor": "middle" });
      label.textContent = tick.label;
      labels.append(label);
    }
    chart.append(svg("path", { class: "axis-grid", d: grid.join("") }), labels);

    const marks = svg("g", { class: values ? "lines" : "bars" });
    if (values) drawLines(marks, body, series, colorOf, xOf, yOf, step);
    else drawBars(marks, body, series, colorOf, xOf, yOf, step, x0, x1);
    chart.append(marks);
    geometry.hover = svg("rect", { class: "hover-band", y: y1, height: y0 - y1, width: 0 });
    geometry.drag = svg("rect", { class: "drag-band", y: y1, height: y0 - y1, width: 0 });
    chart.append(geometry.hover, geometry.drag);
    const total = section.dataset.total;
    chart.setAttribute("aria-label", `${Number(total).toLocaleString()} hits between ` +
                       `${rangeLabel(from, to)}, per ${body.interval}`);
  }

  // Stacked bars: one path per series, a rectangle per non-empty bucket.
  function drawBars(g, body, series, colorOf, xOf, yOf, step, left, right) {
    const paths = series.map(() => []);
    for (const b of body.buckets) {
      const xa = Math.max(left, Math.round(xOf(b.t)));
      const xb = Math.min(right, Math.round(xOf(b.t + step)));
      const w = xb - xa - (xb - xa > 3 ? 1 : 0);
      if (w <= 0) continue;
      let base = 0, yBase = Math.round(yOf(0));
      series.forEach((s, i) => {
        const c = s.pick(b)?.count ?? 0;
        if (c <= 0) return;
        base += c;
        let yTop = Math.round(yOf(base));
        if (yTop >= yBase) yTop = yBase - 1;  // every non-empty bucket shows
        paths[i].push(`M${xa} ${yBase}h${w}V${yTop}h${-w}Z`);
        yBase = yTop;
      });
    }
    series.forEach((s, i) => {
      if (paths[i].length) g.append(svg("path", { d: paths[i].join(""), fill: colorOf(s.key) }));
    });
  }

  // Lines through the buckets' values (a gap where a bucket has none; a lone
  // value shows as a dot through the round line cap).
  function drawLines(g, body, series, colorOf, xOf, yOf, step) {
    for (const s of series) {
      const d = [];
      let pen = false;
      for (const b of body.buckets) {
        const v = s.pick(b)?.value;
        if (typeof v !== "number") { pen = false; continue; }
        const x = xOf(b.t + step / 2).toFixed(1), y = yOf(v).toFixed(1);
        d.push(pen ? `L${x} ${y}` : `M${x} ${y}L${x} ${y}`);
        pen = true;
      }
      if (d.length) g.append(svg("path", { d: d.join(""), stroke: colorOf(s.key), fill: "none" }));
    }
  }

  // Pointer: hover shows a bucket; a drag selects a range to zoom into.
  let dragFrom = null;
  let cursor = -1;  // the bucket shown in the tooltip
  const pointerX = (e) => e.clientX - chart.getBoundingClientRect().left;
  const clampX = (x) => Math.min(geometry.x1, Math.max(geometry.x0, x));

  // The bucket under pixel x, or -1.
  function bucketAt(x) {
    const g = geometry;
    if (!shown || !g || x < g.x0 || x > g.x1) return -1;
    const first = shown.body.buckets[0]?.t ?? g.from;
    const i = Math.floor((g.tOf(x) - first) / g.step);
    return i >= 0 && i < shown.body.buckets.length ? i : -1;
  }

  // Marks bucket i and shows its time and counts in the tooltip.
  function showBucket(i) {
    const g = geometry;
    const b = shown?.body.buckets[i];
    if (!g || !b) { hideHover(); return; }
    cursor = i;
    const { series, colorOf, state } = shown;
    const xa = Math.max(g.x0, g.xOf(b.t)), xb = Math.min(g.x1, g.xOf(b.t + g.step));
    g.hover.setAttribute("x", xa);
    g.hover.setAttribute("width", Math.max(1, xb - xa));
    const rows = [el("div", "tip-time", rangeLabel(b.t, b.t + g.step)),
                  el("div", "tip-total", `${(b.count ?? 0).toLocaleString()} hits`)];
    for (const s of series) {
      const cell = s.pick(b);
      if (!cell || (!cell.count && cell.value == null) || (series.length === 1 && !state.value)) continue;
      const row = el("div", "tip-row");
      const swatch = el("span", "swatch");
      swatch.style.background = colorOf(s.key);
      const amount = state.value
        ? `${cell.value == null ? "–" : shortNumber(cell.value)} (${cell.count} hits)`
        : cell.count.toLocaleString();
      row.append(swatch, el("span", "tip-label", s.label), el("span", "tip-count", amount));
      rows.push(row);
    }
    tooltip.replaceChildren(...rows);
    tooltip.hidden = false;
    const w = tooltip.offsetWidth;
    tooltip.style.left = `${xb + 8 + w > width ? Math.max(0, xa - 8 - w) : xb + 8}px`;
  }

  function hideHover() {
    cursor = -1;
    tooltip.hidden = true;
    geometry?.hover?.setAttribute("width", 0);
  }

  chart.addEventListener("pointermove", (e) => {
    if (!geometry) return;
    const x = pointerX(e);
    if (dragFrom !== null) {
      const a = Math.min(dragFrom, clampX(x)), b = Math.max(dragFrom, clampX(x));
      geometry.drag.setAttribute("x", a);
      geometry.drag.setAttribute("width", b - a);
    }
    const i = bucketAt(x);
    if (i < 0) hideHover();
    else showBucket(i);
  });
  chart.addEventListener("pointerleave", () => { if (dragFrom === null) hideHover(); });
  chart.addEventListener("pointerdown", (e) => {
    if (!geometry || e.button !== 0) return;
    const x = pointerX(e);
    if (x < geometry.x0 || x > geometry.x1) return;
    dragFrom = x;
    chart.setPointerCapture(e.pointerId);
    e.preventDefault();
  });
  chart.addEventListener("pointerup", (e) => {
    if (dragFrom === null) return;
    const x = clampX(pointerX(e));
    const a = Math.min(dragFrom, x), b = Math.max(dragFrom, x);
    dragFrom = null;
    geometry.drag.setAttribute("width", 0);
    if (b - a < DRAG_MIN_PX) return;
    const iso = (t) => new Date(Math.round(t)).toISOString();
    store.set({ from: iso(geometry.tOf(a)), to: iso(geometry.tOf(b)) }, { push: true });
  });
  chart.addEventListener("pointercancel", () => {
    dragFrom = null;
    geometry?.drag.setAttribute("width", 0);
  });

  // Keyboard: arrows walk the buckets, Enter zooms into the one shown.
  chart.setAttribute("tabindex", "0");
  chart.addEventListener("focus", () => {
    const buckets = shown?.body.buckets ?? [];
    let i = buckets.length - 1;
    while (i > 0 && !buckets[i].count) i--;
    if (cursor < 0 && i >= 0) showBucket(i);
  });
  chart.addEventListener("blur", hideHover);
  chart.addEventListener("keydown", (e) => {
    const n = shown?.body.buckets.length ?? 0;
    if (!n) return;
    const moves = { ArrowLeft: -1, ArrowRight: 1, PageUp: -10, PageDown: 10 };
    if (e.key in moves) showBucket(Math.min(n - 1, Math.max(0, cursor + moves[e.key])));
    else if (e.key === "Home") showBucket(0);
    else if (e.key === "End") showBucket(n - 1);
    else if (e.key === "Escape") hideHover();
    else if (e.key === "Enter" && cursor >= 0) {
      const t = shown.body.buckets[cursor].t;
      const iso = (ms) => new Date(ms).toISOString();
      store.set({ from: iso(t), to: iso(t + shown.body.interval_ms) }, { push: true });
    } else return;
    e.preventDefault();
  });

  zoomOut.addEventListener("click", () => {
    if (!shown) return;
    const { from, to } = shown.body;
    const half = (to - from) / 2;
    const end = Math.min(Date.now(), to + half);
    const iso = (t) => new Date(Math.round(t)).toISOString();
    store.set({ from: iso(end - 4 * half), to: end >= Date.now() ? "now" : iso(end) },
              { push: true });
  });

  new ResizeObserver((entries) => {
    const w = Math.floor(entries[0].contentRect.width);
    if (w !== width) {
      width = w;
      hideHover();
      draw();
    }
  }).observe(plot);
  colors.onThemeChange(() => {
    if (!shown) return;
    describe();
    draw();
  });
  store.subscribe((state, changed) => {
    if (isNewSearch(changed) || changed.has("by") || changed.has("value")) load(state);
  });
  load(store.get());
}
