// kenning's web page: plain JavaScript, no build step, nothing fetched from outside this server.
"use strict";
const $ = (id) => document.getElementById(id);
let hits = [];
let selected = -1;

// Every node is built with createElement and textContent: nothing the index holds (a title, a path,
// a page number, a snippet) is ever parsed as HTML, whatever it contains.
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "class") node.className = value;
    else if (key === "title") node.title = String(value);
    else if (key.startsWith("data-")) node.dataset[key.slice(5)] = String(value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function num(value, digits) {
  // a number from the index shown as a number, anything else as nothing
  return typeof value === "number" && isFinite(value) ? value.toFixed(digits) : "";
}

function marked(hit) {
  // the snippet is the document's own text; `highlights` are the matched words' [start, end)
  // spans in code points: <mark> nodes for those, text nodes for the rest, nothing parsed as HTML
  const chars = Array.from(String(hit.snippet));
  const out = el("p", { class: "snippet" });
  let cursor = 0;
  for (const span of Array.isArray(hit.highlights) ? hit.highlights : []) {
    const start = Math.max(cursor, Math.min(chars.length, +span[0] || 0));
    const end = Math.max(start, Math.min(chars.length, +span[1] || 0));
    if (start > cursor) out.append(chars.slice(cursor, start).join(""));
    if (end > start) out.append(el("mark", {}, chars.slice(start, end).join("")));
    cursor = end;
  }
  if (cursor < chars.length) out.append(chars.slice(cursor).join(""));
  return out;
}

async function api(path) {
  const headers = {};
  const token = sessionStorage.getItem("kenning-token");
  if (token) headers["Authorization"] = "Bearer " + token;
  const response = await fetch(path, { headers });
  if (response.status === 401) {
    const given = prompt("This kenning server needs its token:");
    if (given) { sessionStorage.setItem("kenning-token", given); return api(path); }
  }
  const data = await response.json();
  if (!response.ok) throw new Error(data.detail || data.error || response.statusText);
  return data;
}

let common = "";  // the folder every shown path shares, left out so the paths stay readable

function shared(paths) {
  const dirs = paths.filter(Boolean).map((p) => p.split("/").slice(0, -1));
  if (!dirs.length) return "";
  let n = 0;
  while (dirs.every((d) => n < d.length && d[n] === dirs[0][n])) n++;
  return n > 1 ? dirs[0].slice(0, n).join("/") + "/" : "";
}

function short(path) {
  return path && common && path.startsWith(common) ? path.slice(common.length) : path;
}

function where(hit) {
  const path = short(hit.path) || hit.doc_key;
  if (hit.page !== null && hit.page !== undefined) return `${path} p.${hit.page}`;
  if (hit.start_line) return `${path}:${hit.start_line}-${hit.end_line}`;
  return path;
}

function explainText(hit) {
  const lines = [];
  for (const [name, part] of Object.entries(hit.channels || {})) {
    lines.push(`${name}: score ${num(part.score, 3)} (rank ${part.rank}) → ${num(part.contribution, 4)}`);
  }
  const lexical = hit.explain && hit.explain.lexical;
  if (lexical) {
    for (const t of lexical.terms || []) lines.push(`  ${t.term}: idf ${num(t.idf, 2)}, title tf ${t.title && t.title.tf}, body tf ${t.body && t.body.tf} = ${num(t.contribution, 3)}`);
    lines.push(`  BM25 ${num(lexical.sum, 3)} × coordination ${num(lexical.coordination, 2)} = ${num(lexical.score, 3)}`);
  }
  return lines.join("\n");
}

function render(data, explain) {
  hits = Array.isArray(data.hits) ? data.hits : [];
  common = shared(hits.map((h) => String(h.path || "")));
  selected = hits.length ? 0 : -1;
  const f = data.funnel || {};
  $("status").textContent = `${hits.length} result(s) · corpus ${f.corpus} → gathered ${f.gathered} → filtered ${f.filtered} → returned ${f.returned}`;
  const nodes = (data.notices || []).map((n) => el("p", { class: "note" }, n));
  if (!hits.length) nodes.push(el("p", { class: "note" }, `No results: ${data.empty_reason || "nothing matched"}`));
  hits.forEach((hit, i) => {
    const card = el("div", { class: "hit", role: "button", tabindex: "-1", "data-i": i },
      el("h3", {}, hit.title || "(untitled)", el("span", { class: "score" }, readable(hit))),
      el("div", { class: "where", title: hit.path || "" }, where(hit)),
      hit.snippet ? marked(hit) : null,
      explain ? el("pre", { class: "explain" }, explainText(hit)) : null);
    card.addEventListener("click", () => { select(i); open(); });
    nodes.push(card);
  });
  if (hits.length >= limit && limit < MOST) {
    const more = el("button", { type: "button", id: "more" }, "More results");
    more.addEventListener("click", moreResults);
    nodes.push(more);
  }
  $("results").replaceChildren(...nodes);
  highlight();
}

// the raw score, then what a person can compare across queries: confidence and words matched
function readable(hit) {
  const parts = [num(hit.score, 3)];
  if (typeof hit.confidence === "number") parts.push(`conf ${num(hit.confidence, 2)}`);
  const ev = hit.evidence || {};
  if (ev.clauses) parts.push(`${ev.clauses_matched}/${ev.clauses} words`);
  return parts.join(" · ");
}

function highlight() {
  document.querySelectorAll(".hit").forEach((el) => el.classList.toggle("selected", +el.dataset.i === selected));
  const el = document.querySelector(".hit.selected");
  if (el) el.scrollIntoView({ block: "nearest" });
}

function select(i) {
  if (!hits.length) return;
  selected = Math.max(0, Math.min(hits.length - 1, i));
  highlight();
}

async function open() {
  const hit = hits[selected];
  if (!hit) return;
  try {
    // the lines around the hit, not the whole file: a novel is megabytes
    const where = hit.path || hit.doc_key;
    const ref = hit.start_line ? `${where}:${Math.max(1, hit.start_line - 200)}-${(hit.end_line || hit.start_line) + 400}` : where;
    const doc = await api(`/api/get?path=${encodeURIComponent(ref)}&max_chars=200000`);
    const from = hit.start_line || 0, to = hit.end_line || 0;
    const nodes = [el("h2", { title: doc.path }, short(String(doc.path)))];
    for (const s of doc.sections || []) {
      const pre = el("pre");
      for (const l of s.lines || []) {
        const n = typeof l.n === "number" ? l.n : null;
        const hot = n !== null && n >= from && n <= to ? " hot" : "";
        pre.append(el("span", { class: "row" + hot }, el("span", { class: "ln" }, n === null ? "" : n), l.text || " "));
      }
      nodes.push(el("h3", {}, `§ ${s.title || ""}${s.page ? ` (p.${s.page})` : ""}`), pre);
    }
    if (doc.window && doc.window.next) nodes.push(el("p", { class: "note" }, `${doc.window.lines_after} more lines not shown`));
    $("document").replaceChildren(...nodes);
    $("document").hidden = false;
    document.querySelector("main").classList.add("reading");
    const hot = document.querySelector("#document .hot");
    if (hot) hot.scrollIntoView({ block: "center" });
  } catch (err) {
    $("status").textContent = "Could not open: " + err.message;
  }
}

// The API's description, read with the token like every other call (a link to /docs could not send
// it), and shown as text in the reading pane.
async function showApi(event) {
  event.preventDefault();
  try {
    const spec = await api("/openapi.json");
    const nodes = [el("h2", {}, "kenning API")];
    for (const [route, methods] of Object.entries(spec.paths || {})) {
      for (const [method, op] of Object.entries(methods || {})) {
        nodes.push(el("h3", {}, `${method.toUpperCase()} ${route}`));
        if (op.summary) nodes.push(el("p", {}, op.summary));
        const params = (op.parameters || []).map((p) => el("li", {}, el("code", {}, p.name),
          p.required ? " (required)" : "", `: ${p.description || (p.schema && p.schema.type) || ""}`));
        if (params.length) nodes.push(el("ul", {}, ...params));
      }
    }
    nodes.push(el("p", {}, "Machine-readable: /openapi.json. MCP: /mcp."));
    $("document").replaceChildren(...nodes);
    $("document").hidden = false;
    document.querySelector("main").classList.add("reading");
  } catch (err) {
    $("status").textContent = "Could not read the API: " + err.message;
  }
}

function closeDocument() {
  $("document").hidden = true;
  document.querySelector("main").classList.remove("reading");
}

// Everything a search is, as URL parameters: the page's address is the search, so a reload or a
// shared link comes back to the same results (query, mode, every filter, explain, how many).
const TEXT_FILTERS = ["collection", "path", "type", "since", "before", "meta"];
const PAGE = 10, MOST = 100;
let limit = PAGE;

function searchParams() {
  const params = new URLSearchParams({ q: $("q").value.trim(), mode: $("mode").value });
  for (const name of TEXT_FILTERS) if ($(name).value.trim()) params.set(name, $(name).value.trim());
  if ($("explain").checked) params.set("explain", "true");
  if (limit !== PAGE) params.set("limit", String(limit));
  return params;
}

function restore(params) {
  $("q").value = params.get("q") || "";
  if (params.get("mode")) $("mode").value = params.get("mode");
  for (const name of TEXT_FILTERS) $(name).value = params.get(name) || "";
  $("explain").checked = params.get("explain") === "true";
  const asked = parseInt(params.get("limit") || "", 10);
  limit = Number.isFinite(asked) ? Math.max(1, Math.min(MOST, asked)) : PAGE;
  if (TEXT_FILTERS.some((name) => params.get(name))) $("filters").open = true;
}

async function search(event, more) {
  if (event) event.preventDefault();
  if (!more) limit = event ? PAGE : limit;  // a new search starts at one page; a reload keeps its own
  const params = searchParams();
  if (!params.get("q")) return;
  history.replaceState(null, "", "?" + params.toString());
  params.set("limit", String(limit));
  $("status").textContent = "searching…";
  if (!more) closeDocument();
  try {
    render(await api("/api/search?" + params.toString()), params.get("explain") === "true");
  } catch (err) {
    $("status").textContent = "Error: " + err.message;
    $("results").replaceChildren();
  }
}

async function moreResults() {
  const shown = hits.length;
  limit = Math.min(MOST, limit + PAGE);
  await search(null, true);
  if (hits.length > shown) select(shown);  // the first new result, not back to the top
}

$("search").addEventListener("submit", search);
$("api").addEventListener("click", showApi);
document.addEventListener("keydown", (e) => {
  const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName);
  if (e.key === "/" && !typing) { e.preventDefault(); $("q").focus(); $("q").select(); return; }
  if (e.key === "Escape") { if (typing) document.activeElement.blur(); else closeDocument(); return; }
  if (typing) { if (e.key === "ArrowDown" && hits.length) { document.activeElement.blur(); select(0); } return; }
  if (e.key === "j" || e.key === "ArrowDown") { e.preventDefault(); select(selected + 1); }
  if (e.key === "k" || e.key === "ArrowUp") { e.preventDefault(); select(selected - 1); }
  if (e.key === "Enter" || e.key === "o") { e.preventDefault(); open(); }
});

const initial = new URLSearchParams(location.search);
restore(initial);
if (initial.get("q")) search();
