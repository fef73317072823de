// Query text the page writes for the user (a facet clicked, "filter for"
// on a field of a hit), in dashcam's query language (README: Query
// language): field names and values escaped so that any value, including
// one full of quotes or operators, matches exactly what was clicked.
//
// Exactly: `field:value` and `field:"a phrase"` match values that merely
// contain those tokens, in any case (`host.name:"a b"` also finds `a b c`
// and `A"B`), so a string is written as an anchored regular expression,
// `host.name:/^gpu-node-1$/`, which the server narrows by the literal's
// words through the index and then checks row by row (README: What it
// costs). Numbers and booleans are written as such (a regex only sees
// strings): `gpu_util:65`, `gpu_util:[-1 TO -1]`, `ok:true`.

// A field name as the query language reads it: specials escaped with `\`.
export function fieldText(name) {
  return String(name).replace(/[\s+\-&|!(){}[\]^"~*?:\\/<>=]/g, (c) => `\\${c}`);
}

// A regex of exactly `text`: RE2's specials and the `/` delimiter escaped,
// control characters as \x{..} (so a value with a line break stays one line).
function exactRegex(text) {
  const body = text.replace(/[\\.+*?()|[\]{}^$/]/g, (c) => `\\${c}`)
    .replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x{${c.charCodeAt(0).toString(16)}}`);
  return `/^${body}$/`;
}

// A value: numbers and booleans as they are (a negative number as a range,
// since a leading `-` means NOT), anything else as a string matched exactly.
export function valueText(value) {
  if (typeof value === "number" && Number.isFinite(value)) {
    return value < 0 ? `[${value} TO ${value}]` : String(value);
  }
  if (typeof value === "boolean") return String(value);
  return exactRegex(typeof value === "string" ? value : JSON.stringify(value));
}

// The value to filter for, from its text as the API's facets and histogram
// keys give it (always a string): a number or boolean when the field holds
// only those (`types` as /api/v1/fields lists them), or, when the types are
// unknown, when the text reads as a number; else the text.
export function typedValue(text, types = null) {
  const only = (t) => Array.isArray(types) && types.length === 1 && types[0] === t;
  if (only("boolean") && (text === "true" || text === "false")) return text === "true";
  const numeric = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text);
  if (numeric && (types === null ? true : only("number"))) return Number(text);
  return text;
}

// `field:value`, or `NOT field:value` with `negate`.
export function filterClause(field, value, { negate = false } = {}) {
  const clause = `${fieldText(field)}:${valueText(value)}`;
  return negate ? `NOT ${clause}` : clause;
}

// `q` narrowed by `clause`: the clause alone for an empty query; an OR query
// is parenthesised first so the clause applies to all of it. Adding a
// clause already present changes nothing.
export function addClause(q, clause) {
  const query = q.trim();
  if (query === "" || query === "*") return clause;
  if (query === clause || query.endsWith(` AND ${clause}`)) return query;
  // AND binds tighter than OR: "a OR b AND c" would be "a OR (b AND c)".
  const hasOr = /\bOR\b|\|\||\bor\b/.test(query);
  return `${hasOr ? `(${query})` : query} AND ${clause}`;
}
