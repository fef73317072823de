// The runs view (#view-runs, state.view "runs"): the training runs of the
// current search (GET /api/v1/runs, newest activity first) as a table with
// a status badge (running / finished / failed / stalled), first and last
// seen, events, hosts, users and the run's external record; and, for the
// selected run (state.run, pushed, so back returns), a chart of one of its
// metrics (state.metric, "" = loss; /api/v1/runs/{id}/metrics) with its
// incidents (/api/v1/insights, the run's) as dashed markers.
//
// Loads only while shown. Designed states: loading, empty, error with a
// retry, a run without that metric. Log data: textContent only.
import { errorReason, text } from "./api.js";
import { el, externalLink, timeCell } from "./insights.js";
import { lineChart } from "./line_chart.js";
import { isNewSearch, queryParams } from "./store.js";

const METRICS = ["loss", "grad_norm", "lr", "epoch", "step", "tokens_per_s", "samples_per_s",
                 "step_time", "gpu_mem"];
const STATUSES = ["running", "finished", "failed", "stalled"];

function list(values) {
  const items = Array.isArray(values) ? values.map(text) : [];
  return items.length <= 2 ? items.join(", ") : `${items.slice(0, 2).join(", ")} +${items.length - 2}`;
}

export function mountRuns(ctx) {
  const { api, store } = ctx;
  const panel = document.getElementById("view-runs");
  const state0 = el("p", "view-state", "");
  const table = el("table", "runs-table");
  const detail = el("section", "run-detail");
  detail.hidden = true;
  panel.append(state0, table, detail);
  let runs = [];
  let listCall = null;
  let detailCall = null;

  function stateText(message, kind = "", retry = null) {
    state0.className = `view-state ${kind}`;
    state0.replaceChildren(message);
    if (retry) {
      const b = el("button", "chip-button", "Retry");
      b.type = "button";
      b.addEventListener("click", retry);
      state0.append(" ", b);
    }
  }

  async function loadRuns(state) {
    listCall?.abort();
    const call = (listCall = new AbortController());
    stateText("Loading runs…");
    const result = await api.get("api/v1/runs", queryParams(state), { signal: call.signal });
    if (!result || call !== listCall) return;
    if (!result.ok) {
      runs = [];
      table.replaceChildren();
      detail.hidden = true;
      const why = result.status === 404 ? "This dashcam has no runs API." : errorReason(result);
      stateText(`Runs unavailable: ${why}`, "error", () => loadRuns(store.get()));
      return;
    }
    runs = Array.isArray(result.body?.runs) ? result.body.runs.filter((r) => r && r.id != null) : [];
    renderTable(store.get());
    if (!runs.length) {
      stateText("No training runs in this range. A run is told apart by a run id field " +
                "(run_id, TORCHELASTIC_RUN_ID, SLURM_JOB_ID …), else its container or log file.");
    } else {
      const stall = Number(result.body?.stall_after_s);
      stateText(`${runs.length} run${runs.length === 1 ? "" : "s"}` +
                (stall > 0 ? ` · stalled = silent for over ${Math.round(stall / 60)} min` : ""));
    }
    showDetail(store.get());
  }

  function renderTable(state) {
    if (!runs.length) return table.replaceChildren();
    const head = el("tr");
    for (const [label, cls] of [["Run", ""], ["Status", ""], ["First seen", "col-wide"], ["Last seen", ""],
                                ["Events", "num"], ["Hosts", ""], ["Users", "col-wide"], ["", ""]]) {
      head.append(el("th", cls, label));
    }
    const body = el("tbody");
    for (const run of runs) {
      const id = text(run.id);
      const tr = el("tr", "run-row");
      tr.dataset.run = id;
      tr.setAttribute("aria-selected", String(id === state.run));
      const pick = el("button", "link-button run-id", id);
      pick.type = "button";
      pick.title = "Show this run's metrics";
      pick.addEventListener("click", (e) => {
        e.stopPropagation();
        select(id);
      });
      const status = STATUSES.includes(run.status) ? run.status : "running";
      const badge = el("span", `run-status st-${status}`, status);
      if (run.incident?.title) badge.title = text(run.incident.title);
      const link = externalLink(run.link, "Record ↗");
      const cells = [el("td", "", ""), el("td", "", ""), el("td", "col-wide"), el("td"),
                     el("td", "num", String(Number(run.events) || 0)), el("td", "", list(run.hosts)),
                     el("td", "col-wide", list(run.users)), el("td")];
      cells[0].append(pick);
      cells[1].append(badge);
      cells[2].append(timeCell("time", run.first_seen));
      cells[3].append(timeCell("time", run.last_seen));
      if (link) cells[7].append(link);
      tr.append(...cells);
      tr.addEventListener("click", (e) => {
        if (!e.target.closest("a")) select(id);
      });
      body.append(tr);
    }
    table.replaceChildren(el("thead"), body);
    table.firstChild.append(head);
  }

  function select(id) {
    store.set({ run: id === store.get().run ? "" : id }, { push: true });
  }

  async function showDetail(state) {
    detailCall?.abort();
    const run = runs.find((r) => text(r.id) === state.run);
    for (const tr of table.querySelectorAll(".run-row")) {
      tr.setAttribute("aria-selected", String(tr.dataset.run === state.run));
    }
    detail.hidden = !run;
    if (!run) return;
    const call = (detailCall = new AbortController());
    const name = METRICS.includes(state.metric) ? state.metric : "loss";
    const picker = el("select", "metric-select");
    picker.setAttribute("aria-label", "Metric");
    for (const m of METRICS) {
      const option = el("option", "", m);
      option.value = m;
      option.selected = m === name;
      picker.append(option);
    }
    picker.addEventListener("change", () => store.set({ metric: picker.value === "loss" ? "" : picker.value }));
    const head = el("div", "run-detail-head");
    head.append(el("h3", "", `Run ${text(run.id)}`), picker);
    const body = el("div", "run-chart");
    body.append(el("p", "view-state", `Loading ${name}…`));
    detail.replaceChildren(head, body);

    const params = { from: state.from, to: state.to };
    const [metric, insights] = await Promise.all([
      api.get(`api/v1/runs/${encodeURIComponent(text(run.id))}/metrics`, { ...params, name }, { signal: call.signal }),
      // Narrowed to the run (a phrase also matches longer ids: filtered below).
      api.get("api/v1/insights", { ...params, q: `run.id:"${text(run.id).replace(/["\\]/g, "\\$&")}"`, limit: 1000 },
              { signal: call.signal }),
    ]);
    if (!metric || call !== detailCall) return;
    if (!metric.ok) {
      body.replaceChildren(el("p", "view-state error", `The ${name} series is unavailable: ${errorReason(metric)}`));
      return;
    }
    const points = (Array.isArray(metric.body?.points) ? metric.body.points : [])
      .map((p) => ({ t: Date.parse(p?.t), value: Number(p?.value), step: p?.step ?? null }))
      .filter((p) => Number.isFinite(p.t) && Number.isFinite(p.value));
    if (!points.length) {
      body.replaceChildren(el("p", "view-state", `This run logged no ${name} values in this range.`));
      return;
    }
    const incidents = insights?.ok && Array.isArray(insights.body?.incidents)
      ? insights.body.incidents.filter((i) => text(i?.run_id) === text(run.id))
      : run.incident ? [run.incident] : [];
    const markers = incidents.map((i) => ({ t: Date.parse(i.first_seen), label: text(i.title || i.kind),
                                            short: text(i.kind) }));
    lineChart(body, { points, markers, name });
    if (metric.body?.sampled) body.append(el("p", "view-state", "Thinned evenly to fit the chart."));
  }

  store.subscribe((state, changed) => {
    if (state.view !== "runs") return;
    if (isNewSearch(changed) || changed.has("view")) loadRuns(state);
    else if (changed.has("run") || changed.has("metric")) showDetail(state);
  });
  if (store.get().view === "runs") loadRuns(store.get());
}
