// A windowed list: of its items only those near the viewport have an element
// in the DOM (a hundred or so rows whatever the length, so 10 000 hits
// scroll and grow as fast as 100), the rest stand in as the list's top and
// bottom padding. The page (the window) scrolls, not the list.
//
// Heights are measured, not assumed: every rendered row's height is kept
// (by index), unmeasured rows count as the last measured collapsed one, and
// a row that changes height (expanded, collapsed) is measured again on the
// next render. Rows are reconciled by key, so a row that stays in the window
// is never moved (it keeps focus) and an open one stays open.
//
// createVirtualList(list, {key(item), row(item) -> Element}) returns
// {items, setItems, append, prepend, truncate(n), indexOf(key),
//  scrollToIndex(i), elementOf(key), render()}; items is read-only for callers.
const OVERSCAN_PX = 900;

export function createVirtualList(list, { key, row }) {
  let items = [];
  let heights = [];            // measured height by index; undefined = estimate
  let estimate = 24;
  let indexByKey = new Map();
  const rendered = new Map();  // key -> element, in DOM order
  let queued = false;

  const heightOf = (i) => heights[i] ?? estimate;

  function reindex() {
    indexByKey = new Map(items.map((item, i) => [key(item), i]));
  }

  // Offsets of every row's top (prefix sums): O(n), cheap even at 10 000.
  function offsets() {
    const top = new Float64Array(items.length + 1);
    for (let i = 0; i < items.length; i++) top[i + 1] = top[i] + heightOf(i);
    return top;
  }

  // The index of the row covering `y` (list coordinates), by bisection.
  function indexAt(top, y) {
    let lo = 0, hi = items.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (top[mid] <= y) lo = mid;
      else hi = mid - 1;
    }
    return Math.max(0, lo);
  }

  function render() {
    queued = false;
    if (!items.length) {
      for (const el of rendered.values()) el.remove();
      rendered.clear();
      list.style.paddingTop = list.style.paddingBottom = "0px";
      return;
    }
    let top = offsets();
    const listTop = list.getBoundingClientRect().top + scrollY;
    const y0 = scrollY - listTop - OVERSCAN_PX;
    const y1 = scrollY + innerHeight - listTop + OVERSCAN_PX;
    const first = indexAt(top, y0);
    const last = indexAt(top, y1);
    const wanted = [];
    for (let i = first; i <= last; i++) wanted.push([key(items[i]), i]);
    const keep = new Set(wanted.map(([k]) => k));
    for (const [k, el] of rendered) {
      if (!keep.has(k)) {
        el.remove();
        rendered.delete(k);
      }
    }
    let cursor = list.firstElementChild;
    for (const [k, i] of wanted) {
      let el = rendered.get(k);
      if (!el) {
        el = row(items[i]);
        rendered.set(k, el);
      }
      el.setAttribute("aria-posinset", String(i + 1));
      el.setAttribute("aria-setsize", String(items.length));
      if (el === cursor) cursor = cursor.nextElementSibling;
      else list.insertBefore(el, cursor);
    }
    // Measure what is on screen; the padding stands for the rest.
    let changed = false;
    for (const [k, i] of wanted) {
      const h = rendered.get(k).getBoundingClientRect().height;
      if (h > 0 && Math.abs(h - heightOf(i)) > 0.5) {
        heights[i] = h;
        changed = true;
      }
      if (h > 0 && !rendered.get(k).classList.contains("open")) estimate = h;
    }
    if (changed) top = offsets();
    list.style.paddingTop = `${top[first]}px`;
    list.style.paddingBottom = `${top[items.length] - top[last + 1]}px`;
  }

  function schedule() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(render);
  }

  addEventListener("scroll", schedule, { passive: true });
  addEventListener("resize", () => {
    heights = [];  // widths changed: every height may have
    schedule();
  });

  return {
    get items() {
      return items;
    },
    setItems(next) {
      items = [...next];
      heights = [];
      reindex();
      render();
    },
    append(more) {
      items.push(...more);
      for (let i = items.length - more.length; i < items.length; i++) indexByKey.set(key(items[i]), i);
      render();
    },
    prepend(more) {
      items = [...more, ...items];
      heights = [...new Array(more.length), ...heights];
      reindex();
      render();
    },
    // Keeps the first `n` items (the newest), dropping the rest.
    truncate(n) {
      if (items.length <= n) return;
      items = items.slice(0, n);
      heights = heights.slice(0, n);
      reindex();
      render();
    },
    indexOf: (k) => indexByKey.get(k) ?? -1,
    elementOf: (k) => rendered.get(k) ?? null,
    // Scrolls the window so that row `i` is at the top (under the header).
    scrollToIndex(i, offsetPx = 0) {
      const top = offsets();
      const listTop = list.getBoundingClientRect().top + scrollY;
      scrollTo({ top: Math.max(0, listTop + top[i] - offsetPx) });
      render();
    },
    render,
    schedule,
  };
}
