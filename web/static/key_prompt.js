// The key form: when the API answers 401 (dashcam runs with --auth-file and
// the tab has no key, or its key stopped working), a modal form asks for an
// API key as id:key. The key is tried with a search before it is kept: a
// wrong key (401), a key that may not search (403) or a lockout (429) stays
// in the form with the reason. Once accepted it is saved (api.setKey: session
// storage only) and the page searches again (store.refresh()).
import { errorReason, text } from "./api.js";

const $ = (id) => document.getElementById(id);

// "id:key" as the ApiKey token, base64 of its UTF-8 bytes; a token pasted
// as is (hash-key prints both). Null when it is neither.
export function keyToken(value) {
  const v = value.trim();
  const colon = v.indexOf(":");
  if (colon > 0 && colon < v.length - 1) {
    return btoa(String.fromCharCode(...new TextEncoder().encode(v)));
  }
  try {
    const decoded = atob(v);
    const c = decoded.indexOf(":");
    return c > 0 && c < decoded.length - 1 ? v : null;
  } catch {
    return null;
  }
}

export function mountKeyPrompt({ api, store, setStatus }) {
  const dialog = $("key-dialog");
  const form = $("key-form");
  const input = $("key-input");
  const error = $("key-error");
  const submit = $("key-submit");
  const forget = $("forget-key");

  const showError = (message) => {
    error.textContent = message;
    error.hidden = !message;
  };

  api.onUnauthorized = (result) => {
    const refused = api.hasKey();
    api.forgetKey();
    forget.hidden = true;
    showError(refused ? `The saved key was refused: ${text(result.body?.error?.reason)}` : "");
    setStatus("This dashcam needs an API key.");
    if (!dialog.open) dialog.showModal();
    input.focus();
  };

  async function tryKey() {
    const token = keyToken(input.value);
    if (!token) {
      showError("Enter the key as id:key, for example zhangsan:3_QExbNq8Hk2p….");
      input.focus();
      return;
    }
    showError("");
    submit.disabled = true;
    const result = await api.get("api/v1/search", { q: "", limit: 0 }, { token });
    submit.disabled = false;
    let problem = "";
    if (result.status === 401) problem = `That key was refused: ${text(result.body?.error?.reason)}`;
    else if (result.status === 403) problem = `This key may not search: ${text(result.body?.error?.reason)}`;
    else if (!result.ok) problem = `Cannot check the key: ${errorReason(result)}`;
    if (problem) {
      showError(problem);
      input.select();
      return;
    }
    api.setKey(token);
    forget.hidden = false;
    input.value = "";
    dialog.close();
    store.refresh();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    tryKey();
  });
  // Escape keeps the form open, with what was typed: without a key the page
  // can show nothing.
  dialog.addEventListener("cancel", (event) => event.preventDefault());
  dialog.addEventListener("close", () => {
    if (!api.hasKey()) setStatus("This dashcam needs an API key: search to enter one.");
  });
  forget.addEventListener("click", () => {
    api.forgetKey();
    forget.hidden = true;
    store.refresh();
  });
  forget.hidden = !api.hasKey();
}
