// The page's state and the URL that holds it.
//
// State is a flat object of strings, all of it in the URL's fragment
// (#q=...&from=now-24h&to=now&by=host.name&value=&hit=ID), so a link
// reproduces the view and back/forward walk through it:
//   q      the query ("" matches everything)
//   from   start of the time range: date math ("now-24h") or an ISO time
//   to     end of the range: "now" or an ISO time
//   by     the histogram's split field ("" = by level)
//   value  the histogram's numeric series ("avg:gpu_util"; "" = counts)
//   hit    the _id of the expanded hit ("" = none)
//   view   what the results area shows: "" hits, "runs" or "patterns"
//   run    the run selected in the runs view ("" = none)
//   metric the run's metric drawn ("" = loss)
//
// store.set(patch, {push}) changes some keys: with push a new history entry
// (a new search, a zoom), else the current entry is replaced (a toggle). A
// patch that changes q, from or to also clears `hit` unless it names one.
// store.refresh() reruns everything as it is (Enter on an unchanged query).
// Subscribers get (state, changed) with `changed` a Set of key names; a
// refresh (store.refresh(), e.g. after an API key was entered) reports every
// key as changed. Components must treat state as read-only.
export const DEFAULTS = Object.freeze({
  q: "",
  from: "now-24h",
  to: "now",
  by: "",
  value: "",
  hit: "",
  view: "",
  run: "",
  metric: "",
});
const KEYS = Object.keys(DEFAULTS);

function readFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  const state = { ...DEFAULTS };
  for (const k of KEYS) {
    const v = params.get(k);
    if (v !== null) state[k] = v;
  }
  return state;
}

function fragmentOf(state) {
  const params = new URLSearchParams();
  for (const k of KEYS) {
    // from/to are kept even at their defaults, so a shared link does not
    // change meaning if the defaults ever do.
    if (state[k] !== DEFAULTS[k] || k === "from" || k === "to") params.set(k, state[k]);
  }
  return `#${params}`;
}

export function createStore() {
  let state = readFragment();
  const listeners = new Set();
  const notify = (changed) => {
    for (const fn of listeners) fn(state, changed);
  };
  history.replaceState(null, "", fragmentOf(state));
  window.addEventListener("popstate", () => {
    const next = readFragment();
    const changed = new Set(KEYS.filter((k) => next[k] !== state[k]));
    state = next;
    if (changed.size) notify(changed);
  });
  return {
    get: () => state,
    set(patch, { push = false } = {}) {
      // A new search closes the expanded hit (it may not be among the new
      // results) unless the patch says which hit to show.
      const searching = ["q", "from", "to"].some((k) => k in patch && patch[k] !== state[k]);
      if (searching && !("hit" in patch)) patch = { ...patch, hit: "" };
      const changed = new Set(Object.keys(patch).filter((k) => KEYS.includes(k) && patch[k] !== state[k]));
      if (!changed.size) return;
      state = Object.freeze({ ...state, ...patch });
      const url = fragmentOf(state);
      if (push) history.pushState(null, "", url);
      else history.replaceState(null, "", url);
      notify(changed);
    },
    refresh() {
      notify(new Set(KEYS));
    },
    subscribe(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
  };
}

// The parameters every query endpoint takes, from the state.
export function queryParams(state) {
  return { q: state.q, from: state.from, to: state.to };
}

// Whether a change of `changed` keys means the results must be fetched again.
export function isNewSearch(changed) {
  return changed.has("q") || changed.has("from") || changed.has("to");
}
