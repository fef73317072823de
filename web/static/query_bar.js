// The query bar: the query box (Enter runs it: a new history entry; `/`
// focuses it from anywhere but another text field), the recent queries
// (localStorage, offered as the box's suggestions), a syntax help popover
// whose examples go into the box when clicked, and the place where a
// query's error is shown, with a caret under the position the API names.
// The API answers a bad query with 400 and
// {"error":{"type":"query_parse_error","reason":"...","position":N}}, N a
// byte offset into the UTF-8 query.
import { text } from "./api.js";

const $ = (id) => document.getElementById(id);
const HISTORY_ITEM = "dashcam.queryHistory";
const HISTORY_MAX = 20;
const EXAMPLES = [
  ['message:"CUDA out of memory" AND user:zhangsan', "a phrase in the message, and a user"],
  ["level:(ERROR OR WARN)", "either value of one field"],
  ["gpu_mem_mb:>70000", "a numeric range"],
  ['host.name:gpu-node-* AND NOT "nccl"', "a wildcard, and a negation"],
];

export function mountQueryBar({ store }) {
  const form = $("search");
  const input = $("q");
  input.value = store.get().q;
  const history = mountHistory(form, input);
  mountHelp(form, input);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const q = input.value.trim();
    history.add(q);
    if (q === store.get().q) {
      // The same query again: search again (a relative range has moved on).
      store.set({ hit: "" });
      store.refresh();
    } else {
      store.set({ q, hit: "" }, { push: true });
    }
  });
  store.subscribe((state, changed) => {
    if (changed.has("q") && input.value.trim() !== state.q) input.value = state.q;
  });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    const t = event.target;
    if (t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    if (document.querySelector("dialog[open]")) return;
    event.preventDefault();
    input.focus();
    input.select();
  });
}

// Recent queries, newest first, deduplicated, as a <datalist> of the box.
function mountHistory(form, input) {
  const datalist = document.createElement("datalist");
  datalist.id = "q-history";
  form.append(datalist);
  input.setAttribute("list", datalist.id);
  const load = () => {
    try {
      const v = JSON.parse(localStorage.getItem(HISTORY_ITEM) ?? "[]");
      return Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
    } catch {
      return [];
    }
  };
  const render = (items) => {
    datalist.replaceChildren(...items.map((q) => {
      const option = document.createElement("option");
      option.value = q;
      return option;
    }));
  };
  render(load());
  return {
    add(q) {
      if (!q) return;
      const items = [q, ...load().filter((x) => x !== q)].slice(0, HISTORY_MAX);
      try {
        localStorage.setItem(HISTORY_ITEM, JSON.stringify(items));
      } catch {
        // Storage full or denied: the history is a convenience.
      }
      render(items);
    },
  };
}

// The "?" button and its popover (a disclosure: Escape or a click outside
// closes it, focus goes back to the button).
function mountHelp(form, input) {
  const button = document.createElement("button");
  button.type = "button";
  button.id = "q-help-button";
  button.className = "help-button";
  button.textContent = "?";
  button.title = "Query syntax help";
  button.setAttribute("aria-label", "Query syntax help");
  button.setAttribute("aria-expanded", "false");
  button.setAttribute("aria-controls", "q-help");
  const panel = document.createElement("div");
  panel.id = "q-help";
  panel.className = "help-popover";
  panel.hidden = true;
  panel.setAttribute("role", "region");
  panel.setAttribute("aria-label", "Query syntax");
  const intro = document.createElement("p");
  intro.textContent = "Words match the message; field:value a field. AND, OR, NOT, ( ), " +
    '"phrases", wild* cards, ranges like >10 or [1 TO 5]. Click an example to use it:';
  const examples = document.createElement("ul");
  for (const [q, what] of EXAMPLES) {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.className = "example";
    const code = document.createElement("code");
    code.textContent = q;
    b.append(code);
    const note = document.createElement("span");
    note.textContent = what;
    li.append(b, note);
    b.addEventListener("click", () => {
      input.value = q;
      close();
      input.focus();
    });
    examples.append(li);
  }
  panel.append(intro, examples);
  const open = (yes) => {
    panel.hidden = !yes;
    button.setAttribute("aria-expanded", String(yes));
  };
  const close = () => open(false);
  button.addEventListener("click", () => {
    open(panel.hidden);
    if (!panel.hidden) panel.querySelector("button")?.focus();
  });
  panel.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      close();
      button.focus();
    }
  });
  document.addEventListener("click", (event) => {
    if (!panel.hidden && !panel.contains(event.target) && event.target !== button) close();
  });
  form.append(button, panel);
}

// Shows an API error under the bar; `q` is the query it is about.
export function showQueryError(result, q) {
  const error = result?.body?.error;
  const position = error?.position;
  const atPosition = Number.isInteger(position) ? ` (position ${position})` : "";
  const status = result?.status ?? 0;
  const prefix = status === 400 || status === 0 ? "" : `HTTP ${status}`;
  const reason = text(error?.reason);
  const message = [prefix, reason].filter(Boolean).join(": ") || `HTTP ${status}`;
  $("error-reason").textContent = message + atPosition;
  const caret = $("error-caret");
  caret.hidden = !Number.isInteger(position);
  if (!caret.hidden) {
    const bytes = new TextEncoder().encode(q).slice(0, position);
    const column = new TextDecoder().decode(bytes).length;
    caret.textContent = `${q}\n${" ".repeat(column)}^`;
  }
  $("q").setAttribute("aria-invalid", "true");
  $("q").setAttribute("aria-describedby", "error");
  $("error").hidden = false;
}

export function hideQueryError() {
  $("q").removeAttribute("aria-invalid");
  $("error").hidden = true;
}
