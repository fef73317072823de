// One hit as a row of the hits list: a <details> whose <summary> is the log
// line (time, level badge, host, user, message with the query's matches
// marked, a redaction badge) and whose body, built on first open by
// hit_detail.js, is the whole event.
//
// Log events are untrusted: every value reaches the page through
// textContent or a property, never through innerHTML. The server's
// highlight is HTML (escaped text with <mark> tags): markText parses it into
// text nodes and <mark> elements itself.
import { levelName } from "./colors.js";
import { text } from "./api.js";

// The row of `hit`; `onToggle(details, hit)` runs on every open and close.
export function hitRow(hit, onToggle) {
  const src = hit?._source ?? {};
  const timestamp = hit?.["@timestamp"] ?? src["@timestamp"];
  const level = text(src.log?.level ?? src.level);
  const row = document.createElement("li");
  row.dataset.id = text(hit?._id);
  const details = document.createElement("details");
  const line = document.createElement("summary");
  const time = cell("time", formatTime(timestamp));
  time.title = utcTitle(timestamp);
  const levelCell = cell("level", level);
  levelCell.classList.add(levelClass(level));
  const message = cell("message", "");
  const marked = hit?.highlight?.message?.[0];
  if (typeof marked === "string") message.append(...markText(marked));
  else message.textContent = text(src.message ?? src.msg);
  line.append(time, levelCell, cell("host", text(src.host?.name)),
              cell("user", text(src.user?.name ?? src.user)), message);
  const redacted = Array.isArray(src.redacted) ? src.redacted.map(text) : [];
  if (redacted.length) {
    const badge = cell("redacted", `redacted: ${redacted.join(", ")}`);
    badge.title = "Redaction rules fired on this event";
    message.prepend(badge);
  }
  details.append(line);
  details.addEventListener("toggle", () => onToggle(details, hit));
  row.append(details);
  return row;
}

function cell(className, value) {
  const span = document.createElement("span");
  span.className = className;
  span.textContent = value;
  return span;
}

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decodeEntities(s) {
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (all, name) => {
    if (name[0] !== "#") return ENTITIES[name.toLowerCase()] ?? all;
    const code = name[1] === "x" || name[1] === "X"
      ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : all;
  });
}

// Nodes for the server's highlight HTML: only <mark> and </mark> are read as
// tags; everything else is text with its entities decoded, so the result
// reads exactly as the message did.
export function markText(html) {
  const nodes = [];
  let inMark = false;
  for (const piece of html.split(/(<\/?mark>)/)) {
    if (piece === "<mark>") inMark = true;
    else if (piece === "</mark>") inMark = false;
    else if (piece !== "") {
      const node = document.createTextNode(decodeEntities(piece));
      if (inMark) {
        const mark = document.createElement("mark");
        mark.append(node);
        nodes.push(mark);
      } else {
        nodes.push(node);
      }
    }
  }
  return nodes;
}

// The badge class of a level; the same reading as the charts' colours.
export function levelClass(level) {
  return `lvl-${levelName(level)}`;
}

const pad = (n, w = 2) => String(n).padStart(w, "0");

// Local time, to the millisecond; the raw value when it is not a date.
export function formatTime(value) {
  if (value == null) return "";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return text(value);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// The hover text of a local time: the same instant in UTC.
export function utcTitle(value) {
  const d = new Date(value ?? NaN);
  return Number.isNaN(d.getTime()) ? text(value) : `${d.toISOString()} (UTC)`;
}
