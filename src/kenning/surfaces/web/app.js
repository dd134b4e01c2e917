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

// where a hit or a citation sits: pages for a paged document (p.4, pp.4-5), else lines
function placeOf(path, item, pageEnd) {
  if (item.page !== null && item.page !== undefined) {
    return Number.isInteger(pageEnd) && pageEnd > item.page
      ? `${path} pp.${item.page}-${pageEnd}` : `${path} p.${item.page}`;
  }
  if (!item.start_line) return path;
  return item.end_line && item.end_line !== item.start_line
    ? `${path}:${item.start_line}-${item.end_line}` : `${path}:${item.start_line}`;
}

function where(hit) {
  return placeOf(short(hit.path) || hit.doc_key, hit, (hit.meta || {}).page_end);
}

// The explain view says where every figure comes from: a channel's score after feedback beside its
// score for the query as asked (the BM25 sum below is the latter), and the feedback's own terms.
function explainText(hit, funnel) {
  const lines = [];
  const feedback = (funnel && funnel.channels && funnel.channels.feedback) || null;
  for (const [name, part] of Object.entries(hit.channels || {})) {
    let line = `${name}: score ${num(part.score, 3)} (rank ${part.rank}) → ${num(part.contribution, 4)}`;
    const asked = typeof part.query_score === "number" ? part.query_score : part.query_cosine;
    if (typeof asked === "number" && Math.abs(asked - part.score) > 5e-4) {
      const gained = part.score - asked;
      line += `\n  = ${num(asked, 3)} for the query as asked ${gained >= 0 ? "+" : "−"} ${num(Math.abs(gained), 3)} from feedback`;
      if (feedback && Array.isArray(feedback.terms) && feedback.terms.length) {
        line += ` (terms of the first pass's best hits: ${feedback.terms.slice(0, 10).join(", ")})`;
      }
    }
    lines.push(line);
  }
  const lexical = hit.explain && hit.explain.lexical;
  if (lexical) {
    for (const t of lexical.terms || []) lines.push(`  ${t.term}: idf ${num(t.idf, 2)}, title tf ${t.title && t.title.tf}, body tf ${t.body && t.body.tf} = ${num(t.contribution, 3)}`);
    lines.push(`  BM25 ${num(lexical.sum, 3)} × coordination ${num(lexical.coordination, 2)} = ${num(lexical.score, 3)} (the query as asked)`);
  }
  for (const a of hit.adjustments || []) {
    const said = Object.entries(a).filter(([k]) => k !== "stage").map(([k, v]) => `${k} ${typeof v === "number" ? num(v, 3) : JSON.stringify(v)}`);
    lines.push(`${a.stage || "adjusted"}: ${said.join(", ")}`);
  }
  return lines.join("\n");
}

// What the CLI says beside weak evidence: a hit holding none of the query's words, or a relaxed one.
function evidenceNote(hit) {
  const ev = hit.evidence || {};
  const notes = [];
  if (Array.isArray(hit.relaxed) && hit.relaxed.length) notes.push(`relaxed: without ${hit.relaxed.join(", ")}`);
  if (ev.clauses && ev.clauses_matched === 0) {
    notes.push("no query word" + (typeof ev.query_cosine === "number" ? `: found by meaning (cosine ${num(ev.query_cosine, 2)})` : ""));
  }
  return notes.length ? el("div", { class: "evidence" }, notes.join(" · ")) : null;
}

// A hit matched through the glossary says so, as the CLI does: what matched, its group, the fields.
function glossaryNote(hit) {
  const said = (hit.match_reasons || []).filter((r) => r.glossary_group)
    .map((r) => `matched ${r.matched} via glossary group '${r.glossary_group}' in ${(r.fields || []).join(", ")}`);
  return said.length ? el("div", { class: "evidence glossary" }, said.join(" · ")) : null;
}

// A chat hit lists the messages that matched (marked) among their neighbours, each with sender and time.
function messageList(hit) {
  if (!Array.isArray(hit.messages) || !hit.messages.length) return null;
  return el("ul", { class: "messages" }, ...hit.messages.map((m) => el("li", { class: m.matched ? "matched" : "" },
    m.time ? el("time", { datetime: String(m.time) }, new Date(m.time).toLocaleString()) : null,
    m.sender ? el("b", {}, `${m.sender}: `) : null,
    String(m.text || ""))));
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
    // a card is a button: Tab reaches it, Enter or Space opens it
    const card = el("div", { class: "hit", role: "button", tabindex: "0", "data-i": i, "aria-label": `${hit.title || "(untitled)"}, ${where(hit)}` },
      el("h3", {}, hit.title || "(untitled)", el("span", { class: "score" }, readable(hit))),
      el("div", { class: "where", title: hit.path || "" }, where(hit)),
      evidenceNote(hit),
      glossaryNote(hit),
      messageList(hit) || (hit.snippet ? marked(hit) : null),
      explain ? el("pre", { class: "explain" }, explainText(hit, f)) : null);
    card.addEventListener("click", () => { select(i); open(); });
    card.addEventListener("focus", () => { if (selected !== i) { selected = i; highlight(false); } });
    card.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); e.stopPropagation(); select(i); open(); }
    });
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

function highlight(scroll = true) {
  document.querySelectorAll(".hit").forEach((card) => {
    const on = +card.dataset.i === selected;
    card.classList.toggle("selected", on);
    card.setAttribute("aria-current", on ? "true" : "false");
  });
  const card = document.querySelector(".hit.selected");
  if (card && scroll) card.scrollIntoView({ block: "nearest" });
}

function select(i) {
  if (!hits.length) return;
  selected = Math.max(0, Math.min(hits.length - 1, i));
  highlight();
  const card = document.querySelector(".hit.selected");
  if (card && document.activeElement && document.activeElement.classList.contains("hit")) card.focus({ preventScroll: true });
}

// The document view reads a window of lines around the hit, then more as the reader scrolls to
// either end (a novel is megabytes; the first screen needs a few hundred lines).
const BEFORE = 100, AFTER = 300, STEP = 400, WINDOW_CHARS = 200000;
let reader = null;  // what the document view holds: {where, top, bottom, first, last, next, busy}

function documentCall(params) {
  return api("/api/get?" + new URLSearchParams({ max_chars: String(WINDOW_CHARS), ...params }).toString());
}

function linesOf(section, from, to) {
  const pre = el("pre");
  for (const l of section.lines || []) {
    const n = typeof l.n === "number" ? l.n : null;
    const hot = n !== null && n >= from && n <= to ? " hot" : "";
    pre.append(el("span", { class: "row" + hot, "data-n": n === null ? "" : n }, el("span", { class: "ln" }, n === null ? "" : n), l.text || " "));
  }
  return pre;
}

function sectionTitle(s) {
  return `§ ${s.title || ""}${s.page ? ` (p.${s.page})` : ""}`;
}

// Sections at the end (or the start) of what is shown; a section that goes on from the one beside
// it continues its block instead of repeating its title.
function place(doc, atStart) {
  const body = $("doc-body");
  // lines put above what is read must not move it: keep the first line shown where it was (the
  // browser's own scroll anchoring is off for the document view: it does not act at the very top)
  const kept = atStart ? body.querySelector(".row") : null;
  const before = kept ? kept.getBoundingClientRect().top : 0;
  const sections = (doc.sections || []).slice();
  if (atStart) sections.reverse();
  for (const s of sections) {
    const pre = linesOf(s, reader.hotFrom, reader.hotTo);
    const edge = atStart ? body.firstElementChild : body.lastElementChild;
    if (edge && edge.dataset.title === sectionTitle(s)) {
      const block = edge.querySelector("pre");
      if (atStart) block.prepend(...pre.childNodes); else block.append(...pre.childNodes);
      continue;
    }
    const block = el("div", { class: "section", "data-title": sectionTitle(s) }, el("h3", {}, sectionTitle(s)), pre);
    if (atStart) body.prepend(block); else body.append(block);
  }
  const numbers = (doc.sections || []).flatMap((s) => (s.lines || []).map((l) => l.n)).filter((n) => typeof n === "number");
  if (numbers.length) {
    reader.top = reader.top === null ? Math.min(...numbers) : Math.min(reader.top, ...numbers);
    reader.bottom = reader.bottom === null ? Math.max(...numbers) : Math.max(reader.bottom, ...numbers);
  }
  if (doc.document_lines) [reader.first, reader.last] = doc.document_lines;
  if (!atStart) reader.next = doc.window && doc.window.next ? doc.window.next.offset : null;
  edges();
  if (kept) {
    const moved = kept.getBoundingClientRect().top - before;
    const inner = getComputedStyle($("document")).overflowY === "auto";
    if (moved) (inner ? $("document") : document.scrollingElement).scrollTop += moved;
  }
}

function moreAbove() { return reader && reader.top !== null && reader.first !== null && reader.top > reader.first; }
function moreBelow() {
  if (!reader) return false;
  if (reader.bottom !== null && reader.last !== null) return reader.bottom < reader.last;
  return reader.next !== null;
}

function edges() {
  $("doc-above").hidden = !moreAbove();
  $("doc-above").textContent = moreAbove() ? `lines ${reader.first}–${reader.top - 1} above: scroll up to read them` : "";
  $("doc-below").hidden = !moreBelow();
  $("doc-below").textContent = moreBelow()
    ? (reader.last !== null ? `lines ${reader.bottom + 1}–${reader.last} below: scroll on to read them` : "more below: scroll on to read it")
    : "";
}

async function readOn(up) {
  if (!reader || reader.busy || !(up ? moreAbove() : moreBelow())) return;
  reader.busy = true;
  const held = reader;
  try {
    let doc;
    if (up) doc = await documentCall({ path: `${reader.where}:${Math.max(reader.first, reader.top - STEP)}-${reader.top - 1}` });
    else if (reader.bottom !== null && reader.last !== null) doc = await documentCall({ path: `${reader.where}:${reader.bottom + 1}-${Math.min(reader.last, reader.bottom + STEP)}` });
    else doc = await documentCall({ path: reader.where, offset: String(reader.next) });
    if (reader === held) place(doc, up);
  } catch (err) {
    $("status").textContent = "Could not read on: " + err.message;
  } finally {
    held.busy = false;
    if (reader === held) requestAnimationFrame(nearEdges);  // an edge still in sight reads on
  }
}

// Near an edge (within a screen's margin) the view reads on: checked on every scroll of the view or
// the page, and again after each read, so an edge still in sight keeps reading.
const MARGIN = 400;
function nearEdges() {
  if (!reader || $("document").hidden) return;
  const view = $("document").getBoundingClientRect();
  const inner = getComputedStyle($("document")).overflowY === "auto";
  const top = inner ? view.top : 0, bottom = inner ? view.bottom : innerHeight;
  const above = $("doc-above"), below = $("doc-below");
  if (above && !above.hidden && above.getBoundingClientRect().bottom > top - MARGIN) readOn(true);
  else if (below && !below.hidden && below.getBoundingClientRect().top < bottom + MARGIN) readOn(false);
}
$("document").addEventListener("scroll", nearEdges, { passive: true });
addEventListener("scroll", nearEdges, { passive: true });

async function openAt(where, from, to) {
  reader = { where, hotFrom: from || 0, hotTo: to || from || 0, top: null, bottom: null, first: null, last: null, next: null, busy: true };
  const held = reader;
  try {
    const doc = from
      ? await documentCall({ path: `${where}:${Math.max(1, from - BEFORE)}-${(to || from) + AFTER}` })
      : await documentCall({ path: where });
    if (reader !== held) return;
    const above = el("p", { class: "more-lines", id: "doc-above", hidden: "" });
    const below = el("p", { class: "more-lines", id: "doc-below", hidden: "" });
    $("document").replaceChildren(el("h2", { title: doc.path }, short(String(doc.path))), above, el("div", { id: "doc-body" }), below);
    place(doc, false);
    $("document").hidden = false;
    document.querySelector("main").classList.add("reading");
    const hot = document.querySelector("#document .hot");
    if (hot) hot.scrollIntoView({ block: "center" });
  } catch (err) {
    $("status").textContent = "Could not open: " + err.message;
  } finally {
    held.busy = false;
  }
}

function open() {
  const hit = hits[selected];
  if (hit) return openAt(hit.path || hit.doc_key, hit.start_line, hit.end_line);
}

// The answer panel: the answer with its citations (each opens its lines), or the plain "not
// found" and the closest passages, which are not an answer.
async function ask() {
  const question = $("q").value.trim();
  if (!question) return;
  const panel = $("answer");
  panel.hidden = false;
  panel.replaceChildren(el("p", { class: "muted" }, "answering…"));
  try {
    const data = await api("/api/answer?" + new URLSearchParams({ q: question }).toString());
    const cited = (list) => el("ol", { class: "citations" }, ...(list || []).map((c) => {
      const place = placeOf(short(String(c.path || "")), c, c.page_end);
      const link = el("a", { href: "#", class: "cite" }, c.heading || place);
      link.addEventListener("click", (e) => { e.preventDefault(); openAt(c.path, c.start_line, c.end_line); });
      return el("li", {}, link, el("span", { class: "where" }, " " + place), c.quote ? el("blockquote", {}, c.quote) : null);
    }));
    const nodes = [el("h2", {}, data.found ? "Answer" : "Not found in the indexed sources")];
    if (data.found && data.lead) nodes.push(el("p", { class: "answer-lead" }, el("strong", {}, data.lead)));
    nodes.push(el("p", { class: "answer-text" }, data.answer || ""));
    if (data.found) nodes.push(cited(data.citations));
    else if ((data.closest || []).length) nodes.push(el("h3", {}, "Closest passages (they do not answer it)"), cited(data.closest));
    panel.replaceChildren(...nodes);
    panel.classList.toggle("not-found", !data.found);
  } catch (err) {
    panel.replaceChildren(el("p", { class: "note" }, "Could not answer: " + err.message));
  }
}

function closeDocument() {
  reader = null;
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
  if (!$("answer").hidden) params.set("answer", "true");
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
  $("answer").hidden = params.get("answer") !== "true";
}

async function search(event, more) {
  if (event) event.preventDefault();
  if (!more) limit = event ? PAGE : limit;  // a new search starts at one page; a reload keeps its own
  if (event && event.submitter && event.submitter.id === "ask") $("answer").hidden = false;
  else if (event) $("answer").hidden = true;  // a plain search closes the answer it does not ask for
  const params = searchParams();
  if (!params.get("q")) return;
  history.replaceState(null, "", "?" + params.toString());
  params.delete("answer");
  params.set("limit", String(limit));
  $("status").textContent = "searching…";
  if (!more) closeDocument();
  if (!more && !$("answer").hidden) ask();
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
document.addEventListener("keydown", (e) => {
  const tag = document.activeElement.tagName;
  const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(tag);
  if (["BUTTON", "A", "SUMMARY"].includes(tag) && (e.key === "Enter" || e.key === " ")) return;  // its own action
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
