// The results area's tabs (#view-tabs): Hits | Runs | Patterns, each a panel
// of index.html (#view-hits, #view-runs, #view-patterns). The open one is
// state.view ("" = hits), pushed to history so back returns to the last
// view. ←/→ move between tabs (the ARIA tabs pattern); Tab goes into the
// panel. The panels' modules load when their view opens (they subscribe).
const VIEWS = [["", "Hits", "view-hits"], ["runs", "Runs", "view-runs"],
               ["patterns", "Patterns", "view-patterns"]];

export function mountViews({ store }) {
  const bar = document.getElementById("view-tabs");
  const tabs = VIEWS.map(([view, label, panelId]) => {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.className = "view-tab";
    tab.id = `tab-${panelId}`;
    tab.textContent = label;
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-controls", panelId);
    document.getElementById(panelId).setAttribute("aria-labelledby", tab.id);
    tab.addEventListener("click", () => store.set({ view }, { push: true }));
    return tab;
  });
  bar.append(...tabs);
  bar.addEventListener("keydown", (e) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
    if (!step) return;
    const i = tabs.indexOf(document.activeElement);
    const next = tabs[(i + step + tabs.length) % tabs.length];
    next.focus();
    next.click();
  });

  function show(state) {
    const current = VIEWS.some(([v]) => v === state.view) ? state.view : "";
    VIEWS.forEach(([view, , panelId], i) => {
      const on = view === current;
      tabs[i].setAttribute("aria-selected", String(on));
      tabs[i].tabIndex = on ? 0 : -1;
      document.getElementById(panelId).hidden = !on;
    });
    // The hits list measured nothing while hidden: let it lay out again.
    if (current === "") dispatchEvent(new Event("scroll"));
  }
  store.subscribe((state, changed) => {
    if (changed.has("view")) show(state);
  });
  show(store.get());
}

// Whether `state` shows `view`, for panels that load only when seen.
export function showing(state, view) {
  return state.view === view;
}
