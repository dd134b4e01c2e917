"""Snippets: the stretch of a chunk's raw text that holds the most query terms, and where in it
the matched words are.

The text is the document's own, only with runs of whitespace folded to one space; matches come
beside it as character spans (`[start, end)` in Unicode code points), never as markup inside it.
A note's own `**bold**`, `<mark>` or backticks therefore stay what they are, and each surface
draws the spans in its own way: ANSI on a terminal, `<mark>` nodes on the web page, `**…**`
around escaped text in Markdown (kenning.surfaces.render).
"""

from __future__ import annotations

from dataclasses import dataclass, field

SNIPPET_TOKENS = 32
ELLIPSIS = "… "


@dataclass(frozen=True)
class Snippet:
    """Snippet text and the spans of its matched words, in order and never overlapping; for a chat
    window, also the messages that matched with their neighbours (kenning.search.message_lines)."""

    text: str = ""
    spans: list[tuple[int, int]] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)

    def pieces(self):
        """(piece, matched) in reading order: what a renderer walks to draw the matches."""
        cursor = 0
        for start, end in self.spans:
            if start > cursor:
                yield self.text[cursor:start], False
            yield self.text[start:end], True
            cursor = end
        if cursor < len(self.text):
            yield self.text[cursor:], False


def make_snippet(body: str, terms: set[str], analyzer, width: int = SNIPPET_TOKENS) -> Snippet:
    """Pick the window of `width` tokens with the most distinct (then total) matched terms."""
    spans = list(analyzer.token_spans(body))
    if not spans:
        return Snippet(" ".join(body[:200].split()))
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
    folded = _Folded(ELLIPSIS if body[:text_start].strip() else "")
    cursor = text_start
    for i in range(first, end_tok + 1):
        s, e, _ = spans[i]
        if hits[i]:
            folded.add(body[cursor:s])
            folded.add(body[s:e], matched=True)
            cursor = e
    folded.add(body[cursor:text_end])
    rest = body[text_end:].strip()
    if len(rest) <= 3 and not any(ch.isalnum() for ch in rest):
        folded.add(rest)  # the sentence's own full stop, not an ellipsis
    else:
        folded.add(" …")
    return folded.snippet()


class _Folded:
    """Text built piece by piece with whitespace runs folded to one space, keeping match spans."""

    def __init__(self, prefix: str):
        self.chars: list[str] = list(prefix)
        self.spans: list[tuple[int, int]] = []

    def add(self, piece: str, matched: bool = False) -> None:
        start = len(self.chars)
        for ch in piece:
            if ch.isspace():
                if self.chars and self.chars[-1] != " ":
                    self.chars.append(" ")
            else:
                self.chars.append(ch)
        if matched and len(self.chars) > start:
            if self.chars[start] == " ":
                start += 1
            if self.spans and self.spans[-1][1] == start:  # two matched tokens side by side: one span
                start = self.spans.pop()[0]
            self.spans.append((start, len(self.chars)))

    def snippet(self) -> Snippet:
        text = "".join(self.chars).rstrip()
        return Snippet(text, [(s, min(e, len(text))) for s, e in self.spans if s < len(text)])
