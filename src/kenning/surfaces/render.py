"""How results look: search hits and documents as text, JSON, Markdown, CSV, or a list of files.

Text is for people: on a terminal, matches are bold, headings coloured and paths are OSC-8 links
(clickable in most terminals); piped or with NO_COLOR set it is plain text with no markup left in
it. JSON is the same document every surface returns (`SearchResponse.to_dict`)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import time
from pathlib import Path

from kenning.search.postprocess import describe
from kenning.search.results import glossary_reason, location_text, message_text
from kenning.search.snippets import Snippet
from kenning.surfaces.terminal import OWN_ESC, json_safe, quote_path, visible

FORMATS = ("text", "json", "md", "csv", "files")
# what Markdown (CommonMark and GitHub's) may read as markup anywhere in running text, and what
# it reads as a heading, list, rule or quote at the start of a line
_MD_INLINE = re.compile(r"([\\`*_\[\]<>|~&])")
_MD_LINE_START = re.compile(r"^(\d*)([.)#+\-=>])")


class Style:
    """What the output stream can show: colour and links only on a terminal that wants them."""

    def __init__(self, stream):
        tty = hasattr(stream, "isatty") and stream.isatty()
        self.rich = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"

    def sgr(self, text: str, code: str) -> str:
        return f"{OWN_ESC}[{code}m{text}{OWN_ESC}[0m" if self.rich and text else text

    def marks(self, hit) -> str:
        """A hit's snippet with its matched words bold on a terminal; elsewhere the text as it is."""
        return "".join(self.sgr(piece, "1;33") if matched else piece for piece, matched in _pieces(hit))

    def link(self, text: str, path: str, line: int | None = None) -> str:
        if not self.rich or not path.startswith("/"):
            return text
        target = Path(path).as_uri() + (f"#L{line}" if line else "")
        return f"{OWN_ESC}]8;;{visible(target)}{OWN_ESC}\\{text}{OWN_ESC}]8;;{OWN_ESC}\\"


def _pieces(hit):
    """(piece, matched) along a hit's snippet, from its highlight spans."""
    return Snippet(hit.snippet, [tuple(span) for span in hit.highlights]).pieces()


def markdown_text(text: str, line_start: bool = True) -> str:
    """`text` shown literally in Markdown, on one line: every character Markdown could read as
    inline markup (emphasis, code, links, HTML, entities, tables) backslash-escaped, and a start
    that would open a heading, list or quote (when `line_start`)."""
    text = _MD_INLINE.sub(r"\\\1", re.sub(r"\s+", " ", text))
    if line_start:
        text = _MD_LINE_START.sub(r"\1\\\2", text, count=1)
    return text


def markdown_marks(hit) -> str:
    """A hit's snippet for Markdown: the source's own text escaped, its matched words in **bold**."""
    pieces = enumerate(_pieces(hit))
    return "".join(
        f"**{markdown_text(p, False)}**" if m else markdown_text(p, i == 0) for i, (p, m) in pieces
    )


def _code(text: str) -> str:
    """`text` as a Markdown code span, fenced by more backticks than it holds in a row."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{' '.join(text.split())}{pad}{fence}"


def json_text(data) -> str:
    """Strict JSON (no NaN): what every --json prints. Control characters in its strings stay
    escaped (kenning.surfaces.terminal.json_safe), so a reader piping it to a terminal is safe."""
    return json_safe(json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False))


def date_of(epoch: float | None, form: str = "%Y-%m-%d") -> str:
    """An epoch as local time in `form`; "" for none, or for one no calendar holds (an index row may
    say 1e308: it comes from anyone, and `time.localtime` refuses it)."""
    if not epoch:
        return ""
    try:
        return time.strftime(form, time.localtime(epoch))
    except (OverflowError, OSError, ValueError, TypeError):
        return ""


# ------------------------------------------------------------------------------------------ search hits
def render_search(response, fmt: str, style: Style, explain: bool = False, shown_path=lambda p: p) -> str:
    if fmt == "json":
        return json_text(response.to_dict())
    if fmt == "files":
        return "\n".join(dict.fromkeys(quote_path(shown_path(h.path)) for h in response.hits))
    if fmt == "csv":
        return _csv(response, shown_path)
    if fmt == "md":
        return _markdown(response, shown_path)
    return _text(response, style, explain, shown_path)


def _csv(response, shown_path) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "rank",
            "score",
            "confidence",
            "matched",
            "id",
            "path",
            "start_line",
            "end_line",
            "page",
            "title",
            "date",
        ]
    )
    for rank, hit in enumerate(response.hits, 1):
        ev = hit.evidence or {}
        writer.writerow(
            [
                rank,
                f"{hit.score:.4f}",
                f"{hit.confidence:.2f}" if hit.confidence is not None else "",
                f"{ev.get('clauses_matched', '')}/{ev.get('clauses', '')}" if ev else "",
                hit.id,
                shown_path(hit.path),
                hit.start_line or "",
                hit.end_line or "",
                hit.page or "",
                hit.title,
                date_of(hit.time),
            ]
        )
    return out.getvalue().rstrip("\n")


def _markdown(response, shown_path) -> str:
    if not response.hits:
        return f"No results for *{markdown_text(response.query, False)}*: {response.empty_reason}"
    lines = [f"Results for *{markdown_text(response.query, False)}*", ""]
    for rank, hit in enumerate(response.hits, 1):
        where = _location(hit, shown_path)
        score = f"score {hit.score:.3f}{readable_score(hit, ',')}"
        title = markdown_text(hit.title) if hit.title else "(untitled)"
        lines.append(f"{rank}. **{title}** — {_code(where)} ({score})")
        if hit.snippet:
            lines.append(f"   > {markdown_marks(hit)}")
    return "\n".join(lines)


def _text(response, style: Style, explain: bool, shown_path) -> str:
    out = [f"note: {n}" for n in response.notices]
    out += [
        f"did you mean {s['did_you_mean']!r} for {s['word']!r}? (search again with --spell)"
        for s in response.suggestions
    ]
    if explain:
        out += plan_lines(response) + funnel_lines(response.funnel)
    if not response.hits:
        out.append(f"no results for {response.query!r}: {response.empty_reason}")
        return "\n".join(out)
    out += [f"  #{gone['id']} {gone['why']}" for gone in (response.dropped if explain else [])]
    for rank, hit in enumerate(response.hits, 1):
        title = style.sgr(hit.title or "(untitled)", "1")
        out.append(
            f"{rank:>2}. {hit.score:8.4f}{readable_score(hit)}  {title}  [#{hit.id}]{evidence_tag(hit)}"
        )
        where = _location(hit, shown_path)
        dated = f"  · {date_of(hit.time)}" if hit.time else ""
        out.append(f"     {style.link(style.sgr(where, '36'), hit.path, hit.start_line)}{dated}")
        if hit.messages:  # a chat window: the messages that matched, among their neighbours
            out += [f"   {message_text(m)}" for m in hit.messages]
        elif hit.snippet:
            out.append(f"     {style.marks(hit)}")
        out += [f"     {glossary_reason(r)}" for r in hit.match_reasons if r.get("glossary_group")]
        if hit.channels and explain:
            out.append("     channels: " + ", ".join(_channel_part(n, c) for n, c in hit.channels.items()))
        out += [f"     {describe(a)}" for a in (hit.adjustments if explain else [])]
        if hit.explain:
            out += explain_lines(hit.explain)
    return "\n".join(out)


def _location(hit, shown_path) -> str:
    path = quote_path(shown_path(hit.path)) if hit.path else hit.path
    page_end = hit.meta.get("page_end") if isinstance(hit.meta, dict) else None
    return location_text(path, hit.start_line, hit.end_line, hit.page, page_end)


def readable_score(hit, sep: str = " ") -> str:
    """What to read next to the raw score: the 0-1 confidence, comparable across queries, and how
    many of the query's words (clauses) the hit holds."""
    parts = []
    if hit.confidence is not None:
        parts.append(f"conf {hit.confidence:.2f}")
    evidence = hit.evidence
    if evidence and evidence.get("clauses"):
        parts.append(f"{evidence['clauses_matched']}/{evidence['clauses']} words")
    return "".join(f"{sep} {p}" for p in parts)


def evidence_tag(hit) -> str:
    """A plain word on weak evidence: a relaxed hit, or one that holds none of the query words."""
    evidence = hit.evidence
    if not evidence or evidence["clauses"] < 1:
        return ""
    matched, cosine = evidence["clauses_matched"], evidence["query_cosine"]
    relaxed = f"  (relaxed: without {', '.join(hit.relaxed)})" if hit.relaxed else ""
    if matched == 0:
        return relaxed + "  (no query word" + (f"; cosine {cosine:.2f})" if cosine is not None else ")")
    return relaxed


def _channel_part(name: str, part: dict) -> str:
    """One channel of a hit for --explain; after feedback, also its score for the query as asked."""
    asked = part.get("query_cosine", part.get("query_score"))
    rank = f"rank {part['rank']}" + (f"; as asked {asked:.3f}" if asked is not None else "")
    return f"{name} {part['score']:.3f} ({rank}) → {part['contribution']:.4f}"


def funnel_lines(funnel) -> list[str]:
    times = ", ".join(f"{k} {v:.2f} ms" for k, v in funnel.timings_ms.items())
    out = [
        f"funnel: corpus {funnel.corpus} → gathered {funnel.gathered} → filtered {funnel.filtered} → "
        f"scored {funnel.scored} → returned {funnel.returned}"
    ]
    out += [f"  {s['kind']} {s['constraint']}: {s['remaining']} left" for s in funnel.constraints]
    pruning = funnel.channels.get("pruning")
    if pruning:
        out.append(
            f"  pruning: {pruning['skipped']} chunks skipped, their bounds below the top "
            f"(scored {pruning['scored']}; {pruning['how']})"
        )
    for stage in ("fusion", "feedback"):
        weights = funnel.channels.get(stage, {}).get("weights")
        if weights:
            mode = funnel.channels["fusion"]["mode"]
            out.append(f"  {stage} ({mode}): " + "; ".join(_weight_note(n, w) for n, w in weights.items()))
    graph = funnel.channels.get("graph")
    if graph and graph.get("entities"):
        seeds = ", ".join(repr(e["entity"]) for e in graph["entities"])
        near = ", ".join(
            f"{n['entity']} ({n['edge_weight']:.3f} from {n['via']})" for n in graph["neighbours"][:8]
        )
        out.append(f"  graph: query entities {seeds}; neighbours {near or 'none'}")
    dense = funnel.channels.get("dense")
    if dense and dense.get("method") == "hnsw":
        newer = dense.get("newer", 0)
        beside = f", and {newer} newer chunk(s) it lacks searched exactly" if newer else ""
        out.append(f"  dense: HNSW over {dense['vectors']} vectors, the saved graph{beside}")
    if "verbatim" in funnel.channels:
        held = funnel.channels["verbatim"]["chunks"]
        out.append(f"  verbatim: {held} chunk(s) hold the query word for word; they come first")
    out.append(f"  stages: {times}")
    return out


def _weight_note(name: str, w: dict) -> str:
    """One channel's per-query weighting: why it got the say it got."""
    share = f"{100 * w['share_of_top']:.0f}% of the top score"
    if w["normalise"] == "zscore":
        return (
            f"{name} ×{w['weight']:g}, best {w.get('best_z', 0):.1f} sd above its background "
            f"(mean {w['background_mean']:.3f}, sd {w['background_std']:.3f}): {share}"
        )
    return f"{name} ×{w['weight']:g}, min-max over [{w['min']:.3f}, {w['max']:.3f}]: {share}"


def explain_lines(ex: dict) -> list[str]:
    lex = ex["lexical"]
    out = []
    for row in lex["terms"]:
        t, b = row["title"], row["body"]
        where = f" [{row['field']} only]" if row["field"] else ""
        said = f" ×{row['query_weight']:.2f} (said {row['qtf']}×, k3)" if row.get("qtf", 1) > 1 else ""
        out.append(
            f"     {row['term']:<16} idf {row['idf']:.3f} (df {row['df']}){where}{said}"
            f"  title tf {t['tf']:g} → {t['contribution']:.3f}"
            f"  body tf {b['tf']:g} → {b['contribution']:.3f}  = {row['contribution']:.3f}"
        )
    held = f"{lex['matched_clauses']}/{lex['clauses']} clauses"
    if lex.get("params", {}).get("coordination") == "idf":
        held += f", {lex['matched_share']:.0%} of their idf"
    out.append(
        f"     sum {lex['sum']:.3f} × coordination {lex['coordination']:.3f} ({held}) = {lex['score']:.4f}"
    )
    graph = ex.get("graph")
    if graph:
        held = ", ".join(_reached(e) for e in graph["entities"]) or "none of the walk's entities"
        out.append(f"     graph mass {graph['mass']:.3f}: {held}")
    return out


def _reached(entity: dict) -> str:
    """An entity the graph walk reached: a seed, or a neighbour with the seed and edge that lifted it."""
    if "via" not in entity:
        return f"{entity['surface']} (query entity)"
    how = f"{entity['activation']:.2f}, via {entity['via']}, edge {entity['edge_weight']:.3f}"
    return f"{entity['surface']} ({how})"


def plan_lines(response) -> list[str]:
    plan = response.plan
    dropped = f" (stopwords dropped: {plan.dropped_stopwords})" if plan.dropped_stopwords else ""
    out = [f"query: {response.query!r} read as: {plan.parsed.describe()}{dropped}"]
    for clause in plan.clauses:
        need = "required" if clause.required else "soft"
        items = " | ".join(
            f"{i.describe()}{' (glossary: ' + i.via + ')' if i.via else ''}" for i in clause.items
        )
        group = f" (glossary group {clause.group!r})" if clause.group else ""
        out.append(f"  clause {clause.label!r} [{need}]{group}: {items}")
    out += [f"  exclude {item.describe()}" for item in plan.exclusions]
    return out


# ------------------------------------------------------------------------------------------ documents
def render_documents(
    documents: list, fmt: str, style: Style, shown_path=lambda p: p, extra: dict | None = None
) -> str:
    """One or more documents (`kenning get`, `kenning multi-get`)."""
    if fmt == "json":
        data = [d.to_dict() for d in documents]
        return json_text(
            {**(extra or {}), "documents": data} if extra is not None else data[0] if len(data) == 1 else data
        )
    if fmt == "files":
        return "\n".join(dict.fromkeys(quote_path(shown_path(d.path)) for d in documents))
    blocks = []
    for doc in documents:
        path = shown_path(doc.path)
        span = f":{doc.line_range[0]}-{doc.line_range[1]}" if doc.line_range else ""
        dated = f"  · {date_of(doc.time)}" if doc.time else ""
        part = doc.window
        more = (
            f"({part.total - part.offset - part.shown} more lines, {part.chars_after} characters, "
            f"not shown: --offset {part.next_offset} reads on)"
            if part is not None and part.next_offset is not None
            else None
        )
        if fmt == "md":
            body = doc.text(numbered=False)
            blocks.append(f"## {path}{span}\n\n```\n{body}\n```" + (f"\n\n{more}" if more else ""))
            continue
        head = style.sgr(f"── {path}{span}", "1;36") + dated
        lines = [style.link(head, doc.path)]
        for section in doc.sections:
            where = f" (p.{section.page})" if section.page else ""
            lines.append(style.sgr(f"§ {section.title}{where}" if section.title else "§", "1"))
            for n, text in section.lines:
                lines.append(f"{style.sgr(f'{n:>6}', '2')}  {text}" if n is not None else text)
        if more:
            lines.append(style.sgr(more, "2"))
        blocks.append("\n".join(lines))
    for item in (extra or {}).get("left_out", []):
        blocks.append(f"(left out {item['ref']}: {item['chars']} characters over the --max-chars budget)")
    for ref in (extra or {}).get("not_found", []):
        blocks.append(f"(nothing indexed under {ref})")
    return "\n\n".join(blocks)


def answer_text(result: dict) -> str:
    """A short text form of an answer: the answer with numbered citations, or what is not there."""
    if not result["found"]:
        lines = [f"Not found. {result['answer']}"]
        lines += [f"closest: {_cited_at(c)} {c['quote']!r}" for c in result["closest"]]
        return "\n".join(lines)
    lines = [f"Answer: {result['lead']}"] if result.get("lead") else []
    lines.append(result["answer"])
    for n, c in enumerate(result["citations"], 1):
        lines.append(f"[{n}] {_cited_at(c)} ({c['heading']}): {c['quote']!r}")
    return "\n".join(lines)


def _cited_at(citation: dict) -> str:
    """A citation's place: lines, or pages for a paged document; never "None"."""
    return location_text(
        citation["path"],
        citation.get("start_line"),
        citation.get("end_line"),
        citation.get("page"),
        citation.get("page_end"),
    )
