"""Snippets: the stretch of a chunk's raw text that holds the most query terms, matches marked **so**."""

from __future__ import annotations

SNIPPET_TOKENS = 32


def make_snippet(body: str, terms: set[str], analyzer, width: int = SNIPPET_TOKENS) -> str:
    """Pick the window of `width` tokens with the most distinct (then total) matched terms."""
    spans = list(analyzer.token_spans(body))
    if not spans:
        return body[:200].strip()
    hits = [bool(terms.intersection(t)) for _, _, t in spans]
    best_start, best_key = 0, (-1, -1)
    for start in range(0, max(1, len(spans) - width + 1)):
        window = range(start, min(len(spans), start + width))
        if not hits[start] and start > 0:
            continue  # a best window can always start on a match (or at the very beginning)
        distinct = {term for i in window if hits[i] for term in spans[i][2] if term in terms}
        key = (len(distinct), sum(hits[i] for i in window))
        if key > best_key:
            best_start, best_key = start, key
    end_tok = min(len(spans), best_start + width) - 1
    # Start a little before the first match so the snippet reads as a phrase, not a fragment.
    first = max(0, best_start - 3) if best_start > 0 else 0
    text_start, text_end = spans[first][0], spans[end_tok][1]
    out = []
    cursor = text_start
    for i in range(first, end_tok + 1):
        s, e, _ = spans[i]
        if hits[i]:
            out.append(body[cursor:s])
            out.append(f"**{body[s:e]}**")
            cursor = e
    out.append(body[cursor:text_end])
    text = " ".join("".join(out).split())
    prefix = "… " if text_start > 0 else ""
    suffix = " …" if text_end < len(body.rstrip()) else ""
    return f"{prefix}{text}{suffix}"
