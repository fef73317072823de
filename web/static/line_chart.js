// A time-series line chart in SVG (a run's loss curve): local-time x axis
// and round y ticks (chart_axes.js), one path through every point (oldest
// first), dashed vertical markers (incidents) labelled by their <title>,
// and a readout of the point nearest the pointer (or walked to with ←/→).
// Redrawn at the container's width (ResizeObserver). Values from log data
// reach the page as text nodes only.
//
// lineChart(container, {points: [{t: ms, value, step}], markers: [{t: ms,
// label, short}], name}) fills `container` and returns nothing; a marker's
// `short` is written beside it, its `label` is its tooltip.
import { countTicks, shortNumber, timeTicks } from "./chart_axes.js";
import { formatTime } from "./hit_row.js";

const NS = "http://www.w3.org/2000/svg";
const HEIGHT = 200;
const PAD = { left: 48, right: 12, top: 10, bottom: 22 };

function svg(tag, attrs = {}, content) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (content !== undefined) node.textContent = content;
  return node;
}

// The y range [lo, hi] and its ticks: from 0 when every value is positive.
function yScale(values) {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (lo >= 0) {
    const { top, ticks } = countTicks(hi, 4);
    return { lo: 0, hi: top, ticks };
  }
  if (hi === lo) hi = lo + 1;
  const step = (hi - lo) / 4;
  return { lo, hi, ticks: [0, 1, 2, 3, 4].map((i) => lo + i * step) };
}

export function lineChart(container, { points, markers = [], name = "" }) {
  const chart = document.createElement("div");
  chart.className = "line-chart";
  const readout = document.createElement("p");
  readout.className = "view-state";
  container.replaceChildren(chart, readout);

  function draw() {
    const width = Math.max(280, chart.clientWidth || 600);
    const shown = markers.filter((m) => Number.isFinite(m.t));
    const ts = [...points.map((p) => p.t), ...shown.map((m) => m.t)];
    const t0 = Math.min(...ts);
    const t1 = Math.max(...ts, t0 + 1000);
    const { lo, hi, ticks } = yScale(points.map((p) => p.value));
    const x = (t) => PAD.left + ((t - t0) / (t1 - t0)) * (width - PAD.left - PAD.right);
    const y = (v) => HEIGHT - PAD.bottom - ((v - lo) / (hi - lo || 1)) * (HEIGHT - PAD.top - PAD.bottom);
    const root = svg("svg", { viewBox: `0 0 ${width} ${HEIGHT}`, role: "img",
                              "aria-label": `${name}: ${points.length} points` });
    const grid = svg("path", { class: "axis-grid", d: ticks.map((v) => `M${PAD.left},${y(v)}H${width - PAD.right}`).join("") });
    const labels = svg("g", { class: "axis-labels" });
    for (const v of ticks) {
      labels.append(svg("text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end" }, shortNumber(v)));
    }
    for (const tick of timeTicks(t0, t1, Math.max(2, Math.floor(width / 110)))) {
      labels.append(svg("text", { x: x(tick.t), y: HEIGHT - 6, "text-anchor": "middle" }, tick.label));
    }
    const d = points.map((p, i) => `${i ? "L" : "M"}${x(p.t).toFixed(1)},${y(p.value).toFixed(1)}`).join("");
    const line = svg("path", { class: "series", d, "data-points": points.length });
    root.append(grid, labels, line);
    if (points.length === 1) root.append(svg("circle", { class: "dot", cx: x(points[0].t), cy: y(points[0].value), r: 3 }));
    for (const m of shown) {
      const mark = svg("line", { class: "marker", x1: x(m.t), x2: x(m.t), y1: PAD.top, y2: HEIGHT - PAD.bottom });
      mark.append(svg("title", {}, m.label));
      const right = x(m.t) > width / 2;
      root.append(mark, svg("text", { class: "marker-label", x: x(m.t) + (right ? -4 : 4), y: PAD.top + 10,
                                      "text-anchor": right ? "end" : "start" }, m.short ?? ""));
    }
    const cursor = svg("circle", { class: "dot", r: 3.5, visibility: "hidden" });
    root.append(cursor);
    const point = (i) => {
      at = Math.max(0, Math.min(points.length - 1, i));
      const p = points[at];
      cursor.setAttribute("cx", x(p.t));
      cursor.setAttribute("cy", y(p.value));
      cursor.setAttribute("visibility", "visible");
      const step = p.step != null ? `step ${p.step} · ` : "";
      readout.textContent = `${step}${name} ${p.value} · ${formatTime(p.t)}`;
    };
    root.addEventListener("pointermove", (e) => {
      const box = root.getBoundingClientRect();
      const px = ((e.clientX - box.left) / box.width) * width;
      let best = 0;
      points.forEach((p, i) => {
        if (Math.abs(x(p.t) - px) < Math.abs(x(points[best].t) - px)) best = i;
      });
      point(best);
    });
    // ←/→ walk the points from the keyboard (Home/End: first/last).
    root.setAttribute("tabindex", "0");
    root.addEventListener("keydown", (e) => {
      const to = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: points.length - 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      point(to);
    });
    chart.replaceChildren(root);
  }

  readout.textContent = `${points.length} points; point at the curve (or focus it and use ←/→) for values.` +
    (markers.length ? ` Dashed lines: incidents (${markers.map((m) => m.label).join("; ")}).` : "");
  let lastWidth = -1;
  let at = points.length - 1;  // the point the readout shows
  const resized = new ResizeObserver(() => {
    if (!chart.isConnected) return resized.disconnect();
    if (chart.clientWidth === lastWidth) return;
    lastWidth = chart.clientWidth;
    draw();
  });
  resized.observe(chart);
  lastWidth = chart.clientWidth;
  draw();
}
