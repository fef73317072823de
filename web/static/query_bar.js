// The query bar: the query box (Enter runs it: a new history entry), and the
// place where a query's error is shown, with a caret under the position the
// API names. The API answers a bad query with 400 and
// {"error":{"type":"query_parse_error","reason":"...","position":N}}, N a
// byte offset into the UTF-8 query.
import { text } from "./api.js";

const $ = (id) => document.getElementById(id);

export function mountQueryBar({ store }) {
  const form = $("search");
  const input = $("q");
  input.value = store.get().q;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    store.set({ q: input.value.trim(), hit: "" }, { push: true });
  });
  store.subscribe((state, changed) => {
    if (changed.has("q") && input.value.trim() !== state.q) input.value = state.q;
  });
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
  $("error").hidden = false;
}

export function hideQueryError() {
  $("error").hidden = true;
}
