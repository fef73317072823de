// The colours of every series the page draws, so that a level or a value has
// the same colour in the histogram, its legend, the sidebar and the hits.
//
// Colours live in style.css as CSS variables, light and dark
// (--lvl-error/--lvl-warn/--lvl-info/--lvl-debug for levels, --series-0..9
// for values of a field, --series-other and --series-missing); this module
// reads them with getComputedStyle, so a theme change needs no JavaScript
// beyond redrawing (onThemeChange).
//
// levelColor(level): the colour of an event level, any spelling ("ERR",
//   "Warning", "trace" ...); unknown levels are info.
// seriesColor(name): the colour of a field's value. A value hashes to a
//   palette slot, so it keeps its colour across searches and reloads;
//   assign(names) resolves clashes among the values shown together (in
//   order, a clashing value takes the next free slot) and seriesColor then
//   answers those choices (the histogram assigns its series; onAssign
//   tells others to recolour). "other"/"missing" (OTHER/MISSING) are greys.
export const OTHER = "\u0000other";
export const MISSING = "\u0000missing";
const PALETTE_SIZE = 10;

export function levelName(level) {
  const l = String(level ?? "").toLowerCase();
  if (/^(fatal|panic|crit|critical|err|error|alert|emerg|emergency|severe)$/.test(l)) return "error";
  if (/^(warn|warning)$/.test(l)) return "warn";
  if (/^(debug|trace|verbose|fine|finer|finest)$/.test(l)) return "debug";
  return "info";
}

// FNV-1a over UTF-16 code units: stable across browsers and reloads.
function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function createColors(root = document.documentElement) {
  const assigned = new Map();  // name -> slot, for the names last assigned
  const assignListeners = new Set();
  const css = (name) => getComputedStyle(root).getPropertyValue(name).trim();
  const slotColor = (slot) => css(`--series-${slot}`);
  const slotOf = (name) => assigned.get(name) ?? hash(String(name)) % PALETTE_SIZE;

  return {
    levelColor: (level) => css(`--lvl-${levelName(level)}`),
    seriesColor(name) {
      if (name === OTHER) return css("--series-other");
      if (name === MISSING) return css("--series-missing");
      return slotColor(slotOf(name));
    },
    // Gives `names` (most important first) distinct colours where the
    // palette allows; returns nothing (ask seriesColor).
    assign(names) {
      assigned.clear();
      const used = new Set();
      for (const name of names) {
        let slot = hash(String(name)) % PALETTE_SIZE;
        for (let i = 0; i < PALETTE_SIZE && used.has(slot); i++) slot = (slot + 1) % PALETTE_SIZE;
        used.add(slot);
        assigned.set(name, slot);
      }
      for (const fn of assignListeners) fn();
    },
    // Calls fn after every assign (to recolour swatches drawn before it).
    onAssign(fn) {
      assignListeners.add(fn);
    },
    // Calls fn when the system switches between light and dark.
    onThemeChange(fn) {
      matchMedia("(prefers-color-scheme: dark)").addEventListener("change", fn);
    },
  };
}
