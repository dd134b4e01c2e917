// kenning's web page: plain JavaScript, no build step, nothing fetched from outside this server.
"use strict";
const $ = (id) => document.getElementById(id);
let hits = [];
let selected = -1;

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function marked(snippet) {
  // the API marks matched words **like this**: show them highlighted, everything else as text
  return escapeHtml(snippet).replace(/\*\*(.+?)\*\*/g, "<mark>$1</mark>");
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
  if (!response.ok) throw new Error(data.error || response.statusText);
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
    lines.push(`${name}: score ${part.score.toFixed(3)} (rank ${part.rank}) → ${part.contribution.toFixed(4)}`);
  }
  const lexical = hit.explain && hit.explain.lexical;
  if (lexical) {
    for (const t of lexical.terms) lines.push(`  ${t.term}: idf ${t.idf.toFixed(2)}, title tf ${t.title.tf}, body tf ${t.body.tf} = ${t.contribution.toFixed(3)}`);
    lines.push(`  BM25 ${lexical.sum.toFixed(3)} × coordination ${lexical.coordination.toFixed(2)} = ${lexical.score.toFixed(3)}`);
  }
  return lines.join("\n");
}

function render(data, explain) {
  hits = data.hits;
  common = shared(hits.map((h) => h.path));
  selected = hits.length ? 0 : -1;
  const f = data.funnel;
  $("status").textContent = `${hits.length} result(s) · corpus ${f.corpus} → gathered ${f.gathered} → filtered ${f.filtered} → returned ${f.returned}`;
  const parts = (data.notices || []).map((n) => `<p class="note">${escapeHtml(n)}</p>`);
  if (!hits.length) parts.push(`<p class="note">No results: ${escapeHtml(data.empty_reason || "nothing matched")}</p>`);
  hits.forEach((hit, i) => {
    parts.push(`<div class="hit" role="button" tabindex="-1" data-i="${i}">
      <h3>${escapeHtml(hit.title || "(untitled)")}<span class="score">${readable(hit)}</span></h3>
      <div class="where" title="${escapeHtml(hit.path)}">${escapeHtml(where(hit))}</div>
      ${hit.snippet ? `<p class="snippet">${marked(hit.snippet)}</p>` : ""}
      ${explain ? `<pre class="explain">${escapeHtml(explainText(hit))}</pre>` : ""}
    </div>`);
  });
  $("results").innerHTML = parts.join("");
  document.querySelectorAll(".hit").forEach((el) => el.addEventListener("click", () => { select(+el.dataset.i); open(); }));
  highlight();
}

// the raw score, then what a person can compare across queries: confidence and words matched
function readable(hit) {
  const parts = [hit.score.toFixed(3)];
  if (hit.confidence !== null && hit.confidence !== undefined) parts.push(`conf ${hit.confidence.toFixed(2)}`);
  const ev = hit.evidence || {};
  if (ev.clauses) parts.push(`${ev.clauses_matched}/${ev.clauses} words`);
  return escapeHtml(parts.join(" · "));
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
    const doc = await api(`/api/get?path=${encodeURIComponent(hit.path || hit.doc_key)}`);
    const from = hit.start_line || 0, to = hit.end_line || 0;
    const body = doc.sections.map((s) => {
      const lines = s.lines.map((l) => {
        const hot = l.n !== null && l.n >= from && l.n <= to ? " hot" : "";
        const n = l.n === null ? "" : l.n;
        return `<span class="row${hot}" data-n="${n}"><span class="ln">${n}</span>${escapeHtml(l.text) || " "}</span>`;
      }).join("");
      return `<h3>§ ${escapeHtml(s.title || "")}${s.page ? ` (p.${s.page})` : ""}</h3><pre>${lines}</pre>`;
    }).join("");
    $("document").innerHTML = `<h2 title="${escapeHtml(doc.path)}">${escapeHtml(short(doc.path))}</h2>${body}`;
    $("document").hidden = false;
    document.querySelector("main").classList.add("reading");
    const hot = document.querySelector("#document .hot");
    if (hot) hot.scrollIntoView({ block: "center" });
  } catch (err) {
    $("status").textContent = "Could not open: " + err.message;
  }
}

function closeDocument() {
  $("document").hidden = true;
  document.querySelector("main").classList.remove("reading");
}

async function search(event) {
  if (event) event.preventDefault();
  const q = $("q").value.trim();
  if (!q) return;
  const params = new URLSearchParams({ q, mode: $("mode").value });
  for (const name of ["collection", "path", "since"]) if ($(name).value.trim()) params.set(name, $(name).value.trim());
  const explain = $("explain").checked;
  if (explain) params.set("explain", "true");
  history.replaceState(null, "", "?" + params.toString());
  $("status").textContent = "searching…";
  closeDocument();
  try {
    render(await api("/api/search?" + params.toString()), explain);
  } catch (err) {
    $("status").textContent = "Error: " + err.message;
    $("results").innerHTML = "";
  }
}

$("search").addEventListener("submit", search);
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
if (initial.get("q")) {
  $("q").value = initial.get("q");
  if (initial.get("mode")) $("mode").value = initial.get("mode");
  search();
}
