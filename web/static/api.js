// Every call the page makes to dashcam's API goes through here.
//
// When dashcam requires a key (--auth-file), the key the user entered (the
// ApiKey token, base64 of "id:key") is sent as `Authorization: ApiKey ...`
// with every request and kept in sessionStorage only, so it lasts as long as
// the tab. Every request carries `X-Dashcam-Client: web`, for which the
// server's 401 offers no Basic challenge (which would make the browser open
// its own credentials dialog). A 401 is also reported to onUnauthorized (the
// key form, key_prompt.js).
//
// Results are values, never exceptions: {ok, status, body, retryAfter};
// status 0 when dashcam could not be reached (body.error.reason says why),
// and null when the request was aborted through its signal.
const KEY_ITEM = "dashcam.apiKey";

export function createApi() {
  let key = sessionStorage.getItem(KEY_ITEM);
  let onUnauthorized = () => {};

  function headers(token, accept = "application/json") {
    const h = { Accept: accept, "X-Dashcam-Client": "web" };
    if (token) h.Authorization = `ApiKey ${token}`;
    return h;
  }

  function url(path, params) {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(params ?? {})) {
      if (v !== undefined && v !== null && v !== "") search.set(k, String(v));
    }
    const s = search.toString();
    return s ? `${path}?${s}` : path;
  }

  // GET `path` (relative: "api/v1/search") with query `params`; the JSON answer.
  // `token` tries another key than the saved one (the key form's).
  async function get(path, params, { signal, token = key } = {}) {
    try {
      const response = await fetch(url(path, params), {
        signal,
        headers: headers(token),
        cache: "no-store",
      });
      const body = await response.json().catch(() => null);
      const result = {
        ok: response.ok,
        status: response.status,
        body,
        retryAfter: response.headers.get("Retry-After"),
      };
      if (response.status === 401 && token === key) onUnauthorized(result);
      return result;
    } catch (e) {
      if (e.name === "AbortError") return null;
      return {
        ok: false,
        status: 0,
        body: { error: { reason: `cannot reach dashcam: ${e.message}` } },
        retryAfter: null,
      };
    }
  }

  // The raw Response of a streaming GET (live tail, export), for reading its
  // body as it arrives; throws like fetch (AbortError, network errors).
  // A 401 opens the key form, as for get().
  async function stream(path, params, { signal, accept = "text/event-stream" } = {}) {
    const token = key;
    const response = await fetch(url(path, params), {
      signal,
      headers: headers(token, accept),
      cache: "no-store",
    });
    if (response.status === 401 && token === key) {
      const body = await response.clone().json().catch(() => null);
      onUnauthorized({ ok: false, status: 401, body, retryAfter: null });
    }
    return response;
  }

  return {
    get,
    stream,
    url,
    hasKey: () => key !== null,
    setKey(token) {
      key = token;
      sessionStorage.setItem(KEY_ITEM, token);
    },
    forgetKey() {
      key = null;
      sessionStorage.removeItem(KEY_ITEM);
    },
    set onUnauthorized(fn) {
      onUnauthorized = fn;
    },
  };
}

// A value of an event's JSON as text: strings as they are, the rest as JSON.
export function text(value) {
  if (value == null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

// The reason of an API error answer, in words a person can act on.
export function errorReason(result) {
  const reason = text(result?.body?.error?.reason) || `HTTP ${result?.status}`;
  if (result?.status === 403) return `This API key may not do this: ${reason}`;
  if (result?.status === 429 && result.retryAfter) return `${reason} (retry in ${result.retryAfter} s)`;
  return reason;
}
