// The time range (#range): quick ranges (15 m … 7 d, all) and an absolute
// from/to entered in the browser's local time zone, and the current range
// shown in local time with UTC on hover. It reads and writes state.from and
// state.to only: date math ("now-15m" … "now") for quick ranges, "" for
// "all" (the API then reads from the oldest event), and RFC 3339 with the
// local offset for absolute times. A change is a new history entry.
const QUICK = [
  ["15 m", "now-15m", "Last 15 minutes"],
  ["1 h", "now-1h", "Last hour"],
  ["6 h", "now-6h", "Last 6 hours"],
  ["24 h", "now-24h", "Last 24 hours"],
  ["7 d", "now-7d", "Last 7 days"],
  ["all", "", "All time"],
];
const pad = (n) => String(n).padStart(2, "0");

// A Date as RFC 3339 in the browser's time zone: 2026-11-30T09:15:00+01:00.
export function localIso(d) {
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? "+" : "-";
  const a = Math.abs(off);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` +
         `${sign}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

// A datetime-local input's value for a time (ISO or epoch ms) ("" if none).
function inputValue(value) {
  if (!value || value.startsWith("now")) return "";
  const d = new Date(/^\d+$/.test(value) ? Number(value) : value);
  if (Number.isNaN(d.getTime())) return "";
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// How a from/to value reads: local time for absolute ones, with UTC.
function describe(value) {
  if (value === "now") return { local: "now", utc: "now" };
  const d = new Date(/^\d+$/.test(value) ? Number(value) : value);
  if (Number.isNaN(d.getTime())) return { local: value, utc: value };
  const local = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return { local, utc: d.toISOString().replace(".000Z", "Z") };
}

const UNIT_MS = { s: 1e3, m: 6e4, h: 36e5, d: 864e5, w: 6048e5 };

// The Date of "now-<n><unit>" as of now; null for anything else.
function resolve(value) {
  const m = /^now-(\d+)([smhdw])$/.exec(value);
  return m ? new Date(Date.now() - Number(m[1]) * UNIT_MS[m[2]]) : null;
}

function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...children);
  return e;
}

export function mountTimeRange({ store }) {
  const root = document.getElementById("range");
  const quick = el("div", { className: "quick-ranges" });
  quick.setAttribute("role", "group");
  quick.setAttribute("aria-label", "Quick time ranges");
  const buttons = QUICK.map(([label, from, title]) => {
    const b = el("button", { type: "button", textContent: label, title });
    b.dataset.from = from;
    b.addEventListener("click", () => store.set({ from, to: "now", hit: "" }, { push: true }));
    quick.append(b);
    return b;
  });
  const shown = el("span", { className: "range-label" });
  const fromInput = el("input", { type: "datetime-local", id: "range-from", step: 60 });
  const toInput = el("input", { type: "datetime-local", id: "range-to", step: 60 });
  const apply = el("button", { type: "submit", textContent: "Apply" });
  const problem = el("span", { className: "range-error", hidden: true });
  problem.setAttribute("role", "alert");
  const form = el("form", { className: "absolute-range" },
                  el("label", { htmlFor: "range-from", textContent: "From" }), fromInput,
                  el("label", { htmlFor: "range-to", textContent: "To" }), toInput, apply, problem);
  form.setAttribute("aria-label", "Absolute time range (local time)");
  const custom = el("details", { className: "custom-range" },
                    el("summary", { textContent: "Custom…" }), form);
  root.append(quick, custom, shown);

  custom.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && custom.open) {
      custom.open = false;
      custom.querySelector("summary").focus();
    }
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const from = fromInput.value ? new Date(fromInput.value) : null;
    const to = toInput.value ? new Date(toInput.value) : null;
    if (from && to && from > to) {
      problem.textContent = "From is after To.";
      problem.hidden = false;
      return;
    }
    problem.hidden = true;
    store.set({ from: from ? localIso(from) : "", to: to ? localIso(to) : "now", hit: "" },
              { push: true });
    custom.open = false;
  });

  const render = (state) => {
    const preset = QUICK.find(([, from]) => from === state.from && state.to === "now");
    for (const b of buttons) b.setAttribute("aria-pressed", String(preset?.[1] === b.dataset.from));
    if (preset) {
      // Resolved as of now (each search resolves it again).
      const start = resolve(state.from);
      shown.textContent = preset[2];
      shown.title = start
        ? `${describe(start.toISOString()).local} → now (local)\n${start.toISOString()} → now (UTC)`
        : "From the oldest stored event to now";
    } else {
      const from = state.from ? describe(state.from) : { local: "the beginning", utc: "the beginning" };
      const to = describe(state.to || "now");
      shown.textContent = `${from.local} → ${to.local}`;
      shown.title = `UTC: ${from.utc} → ${to.utc}`;
    }
    fromInput.value = inputValue(state.from);
    toInput.value = inputValue(state.to);
  };
  render(store.get());
  store.subscribe((state, changed) => {
    if (changed.has("from") || changed.has("to")) render(state);
  });
}
