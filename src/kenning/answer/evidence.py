"""Evidence for an answer: the passages every angle of the plan finds, fused, split into sentences
with their line numbers, each sentence scored against the question.

Retrieval depth follows the candidates asked for (Lume: clamp(candidates, 10, 20) passages), not a
fixed 10. Each angle's ranking counts by reciprocal rank times the angle's weight, so a passage
several angles agree on comes first, and one only a single angle finds still gets in. k = 20, not
the usual 60: with five angles of 20 passages each, the first places should count for more than
k = 60 lets them (on the answer dev questions k = 10, 20 and 30 each quoted a right chapter more
often than 60; docs/answers.md).

A sentence's support for the question:
- words: the idf-weighted share of the question's terms in its window (the sentence with one on each
  side), since an answer often names the subject in one sentence and says what happened in the next,
  and a smaller share for the terms in the sentence itself, so that of two neighbours the one that
  holds the question's words is quoted;
- meaning: the cosine of the window with the question, when the index has vectors (else the words of
  the sentence itself); a window's vector is the normalised sum of its sentences' vectors;
- agreement: 1/sqrt(rank) of its passage in the fused ranking of the angles.
The weights were chosen on the answer dev questions (benchmarks/answer_eval.py; docs/answers.md).

When the question asks for a value of a kind a rule recognises (a name, a number, a year, an amount;
kenning.answer.answer_type), each sentence also records whether it states one on the question's
topic: the sentence states the value, and it or a neighbour holds one of the question's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kenning.answer.answer_type import TYPE_WORDS, states_answer
from kenning.answer.planner import without_frame
from kenning.answer.sources import AnswerSources
from kenning.store.records import own_text

RRF_K = 20.0
# a sentence ends at . ! or ? (and any closing quotes) before white space, or at a blank line; a
# single line break inside a paragraph (hard-wrapped text) does not end it
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)|\n[ \t]*\n")


def passage_count(candidates: int) -> int:
    return max(10, min(20, candidates))


@dataclass
class Sentence:
    text: str
    start_line: int | None
    end_line: int | None
    words: float = 0.0  # idf-weighted share of the question's terms in the sentence
    window_words: float = 0.0  # the same over the sentence and its neighbours
    cosine: float | None = None  # of the window with the question
    missing: list[str] = field(default_factory=list)  # question terms its window lacks
    rank: int = 1  # its passage's place in the fused ranking of every angle
    states: bool = True  # states a value of the kind the question asks for, on its topic

    @property
    def support(self) -> float:
        """Words in the window and in the sentence, meaning (when the index has vectors), and how
        high the angles agree its passage ranks."""
        if self.cosine is None:
            return 0.45 * self.window_words + 0.25 * self.words + 0.4 / self.rank**0.5
        return 0.45 * self.window_words + 0.2 * self.words + 0.6 * self.cosine + 0.4 / self.rank**0.5


@dataclass
class Passage:
    chunk_id: int
    path: str
    heading: str
    start_line: int | None
    end_line: int | None
    body: str
    score: float
    angles: list[str]
    sentences: list[Sentence] = field(default_factory=list)
    page: int | None = None  # first page of a paged document
    page_end: int | None = None  # last page, when another

    def best(self) -> Sentence | None:
        return max(self.sentences, key=lambda s: s.support, default=None)


def gather(sources: AnswerSources, angles, candidates: int) -> list[Passage]:
    """The top passages over every angle, fused by reciprocal rank."""
    depth = passage_count(candidates)
    fused: dict[int, float] = {}
    found_by: dict[int, list[str]] = {}
    for angle in angles:
        settings = sources.settings or {}
        response = sources.search(
            angle.text, limit=depth, mode=angle.mode, detail="heads", syntax="plain", **settings
        )
        seen = set()
        for rank, hit in enumerate(response.hits, 1):
            if hit.id in seen:
                continue
            seen.add(hit.id)
            fused[hit.id] = fused.get(hit.id, 0.0) + angle.weight / (RRF_K + rank)
            found_by.setdefault(hit.id, []).append(angle.kind)
    chosen = sorted(fused, key=lambda c: (-fused[c], c))[:depth]
    rows = sources.chunks(chosen)
    return [
        Passage(
            c,
            rows[c].path,
            rows[c].title,
            rows[c].start_line,
            rows[c].end_line,
            own_text(rows[c].title, rows[c].body),
            fused[c],
            found_by[c],
            page=rows[c].page,
            page_end=_page_end(rows[c].meta),
        )
        for c in chosen
        if c in rows
    ]


def _page_end(meta) -> int | None:
    """A paged passage's last page (kenning.ingest.pdf), when its metadata holds a whole number."""
    value = meta.get("page_end") if isinstance(meta, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def split_sentences(passage: Passage) -> list[Sentence]:
    """The passage's sentences, each with the lines it spans (when the passage has line numbers; the
    body is exact lines of the file ending at end_line, as kenning.api.documents reads it)."""
    body, out, start = passage.body, [], 0
    ends = [m.end() for m in _SENTENCE_END.finditer(body)] + [len(body)]
    for end in ends:
        raw = body[start:end]
        text = " ".join(raw.split())
        if len(text) >= 12 and any(c.isalpha() for c in text):
            first = last = None
            if passage.end_line is not None:  # the body is exact lines ending at end_line
                top = passage.end_line - body.count("\n")
                lead = len(raw) - len(raw.lstrip())
                first = top + body.count("\n", 0, start + lead)
                last = top + body.count("\n", 0, start + len(raw.rstrip()))
            out.append(Sentence(text, first, last))
        start = end
    return out


def score_sentences(
    sources: AnswerSources,
    question: str,
    passages: list[Passage],
    embed=None,
    names=(),
    kind: str | None = None,
) -> None:
    """Fill every sentence's support, and (`kind`: the answer type) whether it states the value.

    The words of the question's names (`names`: entity keys) do not count in a sentence's words
    unless the question has nothing else: the passage must be about them (the judge checks), but the
    sentence that answers often calls them "he" or "the old man" (Lume's proper-noun bias)."""
    analyzer = sources.analyzer
    terms = analyzer.query_terms(without_frame(question))
    topic = set()  # the question's words other than those that say what kind of value it asks for
    if kind is not None:
        topic = set(terms) - set(analyzer.query_terms(" ".join(TYPE_WORDS), remove_stopwords=False))
    name_terms = {t for name in names for t in analyzer.query_terms(name, remove_stopwords=False)}
    if any(t not in name_terms for t in terms):
        terms = [t for t in terms if t not in name_terms]
    weight = dict(zip(terms, sources.idfs(terms), strict=True))
    total = sum(weight.values()) or 1.0
    sentences: list[Sentence] = []
    spans: list[tuple[int, int]] = []  # each sentence's window, as a range of positions in `sentences`
    for rank, passage in enumerate(passages, 1):
        passage.sentences = split_sentences(passage)
        first = len(sentences)
        held = [set(analyzer.terms(s.text)) for s in passage.sentences]
        for i, sentence in enumerate(passage.sentences):
            sentence.rank = rank
            around = set().union(*held[max(0, i - 1) : i + 2])
            sentence.words = sum(w for t, w in weight.items() if t in held[i]) / total
            sentence.window_words = sum(w for t, w in weight.items() if t in around) / total
            sentence.missing = [t for t in terms if t not in around]
            if kind is not None:
                sentence.states = bool(topic & around) and states_answer(sentence.text, kind, question)
            spans.append((first + max(0, i - 1), first + min(len(passage.sentences), i + 2)))
        sentences.extend(passage.sentences)
    if embed is not None and sentences:
        _window_cosines(question, sentences, spans, embed)


def _window_cosines(question: str, sentences: list[Sentence], spans, embed) -> None:
    """Each window's cosine with the question. Every sentence is embedded once and a window's vector
    is the normalised sum of its sentences' vectors: a third of the text to embed compared with
    embedding each three-sentence window (the answer's main cost)."""
    vectors = np.asarray(embed([question] + [s.text for s in sentences]), dtype=np.float32)
    query, rows = vectors[0], vectors[1:]
    sums = np.cumsum(np.vstack([np.zeros((1, rows.shape[1]), np.float32), rows]), axis=0)
    for sentence, (lo, hi) in zip(sentences, spans, strict=True):
        window = sums[hi] - sums[lo]
        norm = float(np.linalg.norm(window)) or 1.0
        sentence.cosine = float(window @ query) / norm
