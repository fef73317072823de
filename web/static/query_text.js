// Query text the page writes for the user (a facet clicked, "filter for"
// on a field of a hit), in dashcam's query language (README: Query
// language): field names and values escaped so that any value, including
// one full of quotes or operators, matches exactly what was clicked.

// Characters with a meaning in the query language.
const SPECIAL = /[\s+\-&|!(){}[\]^"~*?:\\/<>=]/;

// A field name as the query language reads it: specials escaped with `\`.
export function fieldText(name) {
  return String(name).replace(/[\s+\-&|!(){}[\]^"~*?:\\/<>=]/g, (c) => `\\${c}`);
}

// A value: as is when it is one plain word (and not an operator word),
// else a phrase with `"` and `\` escaped.
export function valueText(value) {
  const v = typeof value === "string" ? value : JSON.stringify(value);
  if (v !== "" && !SPECIAL.test(v) && !/^(and|or|not)$/i.test(v)) return v;
  return `"${v.replace(/["\\]/g, (c) => `\\${c}`)}"`;
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
