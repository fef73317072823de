// The insights slot (#insights), which the GPU-insights issue fills.
// ctx.setInsights(nodes) shows the section with those nodes (an array, or
// null/[] to hide it): whatever fills it owns its content. Until then this
// module asks GET /api/v1/insights (with the search's q/from/to) on every
// new search: a 200 with a list is shown as text, one item per line; any
// other answer leaves the slot hidden, silently, and a 404 (a server without
// insights) stops the asking until the page is reloaded.
import { text } from "./api.js";
import { isNewSearch, queryParams } from "./store.js";

// An item's words: a string, or an object's title/message/summary, else JSON.
function itemText(item) {
  if (typeof item === "string") return item;
  const words = item?.title ?? item?.message ?? item?.summary ?? item?.text;
  return words !== undefined ? text(words) : text(item);
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

  let controller = null;
  let available = true;
  async function load(state) {
    controller?.abort();
    controller = new AbortController();
    const my = controller;
    const result = await api.get("api/v1/insights", queryParams(state), { signal: my.signal });
    if (!result || controller !== my) return;
    const body = result.body;
    const items = Array.isArray(body) ? body : Array.isArray(body?.insights) ? body.insights : null;
    if (result.status === 404) available = false;
    if (!result.ok || !items) {
      if (result.status !== 401) setInsights(null);
      return;
    }
    const heading = document.createElement("h2");
    heading.textContent = "Insights";
    const ul = document.createElement("ul");
    for (const item of items) {
      const li = document.createElement("li");
      li.textContent = itemText(item);
      ul.append(li);
    }
    setInsights(items.length ? [heading, ul] : null);
  }
  store.subscribe((state, changed) => {
    if (available && isNewSearch(changed)) load(state);
  });
  load(store.get());
}
