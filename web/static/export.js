// Export (#export): every event of the current query and range as NDJSON or
// CSV, from /api/v1/export. The file is fetched through api.stream (so the
// API key header goes with it; a plain link could not carry it), collected
// into a Blob and handed to the browser as an <a download> of an object
// URL, revoked once the download has started.
import { errorReason } from "./api.js";
import { queryParams } from "./store.js";

function el(tag, props = {}) {
  return Object.assign(document.createElement(tag), props);
}

// A file name for an export made now: dashcam-20261130-091500.ndjson.
function fileName(format) {
  const d = new Date();
  const p = (n) => String(n).padStart(2, "0");
  return `dashcam-${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-` +
         `${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}.${format}`;
}

export function mountExport({ api, store }) {
  const root = document.getElementById("export");
  const format = el("select", { id: "export-format", title: "Export format" });
  format.setAttribute("aria-label", "Export format");
  for (const f of ["ndjson", "csv"]) format.append(el("option", { value: f, textContent: f.toUpperCase() }));
  const go = el("button", { type: "button", id: "export-button", textContent: "Export" });
  go.title = "Download every event of this search";
  const status = el("span", { className: "export-status" });
  status.setAttribute("role", "status");
  root.append(format, go, status);

  let controller = null;
  go.addEventListener("click", async () => {
    if (controller) {  // a second click cancels
      controller.abort();
      return;
    }
    controller = new AbortController();
    const kind = format.value;
    go.textContent = "Cancel export";
    status.textContent = "Exporting…";
    try {
      const response = await api.stream("api/v1/export", { ...queryParams(store.get()), format: kind },
                                        { signal: controller.signal, accept: "*/*" });
      if (!response.ok) {
        const body = await response.json().catch(() => null);
        status.textContent = `Export failed: ${errorReason({ status: response.status, body, retryAfter: response.headers.get("Retry-After") })}`;
        return;
      }
      const blob = await response.blob();
      const url = URL.createObjectURL(blob);
      const a = el("a", { href: url, download: fileName(kind) });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      status.textContent = `Exported ${(blob.size / 1024).toFixed(blob.size < 10240 ? 1 : 0)} KiB`;
    } catch (e) {
      status.textContent = e.name === "AbortError" ? "Export cancelled" : `Export failed: ${e.message}`;
    } finally {
      controller = null;
      go.textContent = "Export";
    }
  });
}
