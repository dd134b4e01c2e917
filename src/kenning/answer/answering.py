"""Cited answers: plan, gather, judge, then answer with a citation on every sentence, or say plainly
what the sources do not say.

Without a model (the default) the answer is extractive: a one-line answer (kenning.answer.lead: the
name, place, date or value the question asks for, taken from the cited sentences), then the best
supporting sentences, each cited with its file, heading path, line range and the quoted words.
With a chat model (kenning.models.chat) the model writes the answer from the numbered passages and
must cite one after every sentence; a sentence it does not cite is kept only when one place in the
passages holds nearly all its words (then that place is cited), else dropped; a model that finds no
answer says NOT FOUND. Its first sentence is the one-line answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kenning.analysis.analyzer import fold
from kenning.analysis.stopwords import ENGLISH_QUERY_STOPWORDS
from kenning.answer.answer_type import question_type
from kenning.answer.evidence import Sentence, gather, score_sentences
from kenning.answer.judge import judge, missing_names
from kenning.answer.lead import lead_line
from kenning.answer.planner import plan_angles, question_names
from kenning.answer.sources import AnswerSources
from kenning.search.results import location_text

MAX_SENTENCES = 3
ANSWER_DEPTH = 3  # passages whose best sentences answer a question that asks for no typed value
VALUE_DEPTH = 10  # passages searched for a sentence stating the value a question asks for
PER_PASSAGE = 2  # sentences quoted from one passage at most
NEAR_BEST = 0.85  # a passage's runner-up sentence is quoted when it supports this nearly as well
ATTRIBUTION_SHARE = 0.75  # of an uncited model sentence's words one place must hold to be its citation
QUOTE_CHARS = 300
ANSWER_PROMPT = (
    "Answer the question using only the numbered passages. After every sentence, cite the passages it "
    "rests on as [n]. If the passages do not answer the question, or the question assumes something "
    "the passages do not say, reply exactly: NOT FOUND: followed by one sentence on what the passages "
    "do not say."
)


@dataclass
class Citation:
    path: str
    heading: str
    start_line: int | None
    end_line: int | None
    quote: str
    chunk_id: int
    page: int | None = None  # the first page, for a paged document (PDF)
    page_end: int | None = None  # its last page, when the passage runs over several

    def location(self) -> str:
        """`file:12-14`, `file p.4` or `file pp.4-5` (kenning.search.results.location_text)."""
        return location_text(self.path, self.start_line, self.end_line, self.page, self.page_end)

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "heading": self.heading,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "page": self.page,
            "page_end": self.page_end,
            "location": self.location(),
            "quote": self.quote,
            "chunk_id": self.chunk_id,
        }


@dataclass
class Answer:
    question: str
    found: bool
    answer: str
    citations: list[Citation]
    queries: list[dict]
    method: str
    judge: dict
    closest: list[Citation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lead: str = ""  # the one-line answer (kenning.answer.lead); "" when not found

    def to_dict(self) -> dict:
        return {
            "question": self.question,
            "found": self.found,
            "lead": self.lead,
            "answer": self.answer,
            "citations": [c.to_dict() for c in self.citations],
            "queries": self.queries,
            "method": self.method,
            "judge": self.judge,
            "closest": [c.to_dict() for c in self.closest],
            "notes": self.notes,
        }


def answer_question(sources: AnswerSources, question: str, llm=None, candidates: int = 20) -> Answer:
    """Answer `question` from what `sources` finds (Index.answer builds them from an index)."""
    question = " ".join(question.split())
    if not question:
        raise ValueError("the question is empty")
    notes: list[str] = []
    has_vectors = sources.has_vectors
    angles = plan_angles(sources, question, has_vectors, llm, notes)
    passages = gather(sources, angles, candidates)
    embed = _embedder(sources, notes) if has_vectors else None
    name_keys = question_names(sources, question)
    kind = question_type(question)
    score_sentences(sources, question, passages, embed, name_keys, kind)
    forms = sources.entity_graph().forms
    chosen = in_one_document(choose_sentences(passages, kind), name_keys, forms)
    verdict = judge(chosen, passages, name_keys, kind, embed is not None, forms=forms)
    queries = [a.to_dict() for a in angles]
    closest = _closest(passages)
    method = "extractive" if llm is None else f"llm:{llm.name}"
    if llm is not None and passages:
        if not _vetoed(verdict):
            return _with_model(llm, question, passages, queries, verdict, closest, notes)
        notes.append(
            "the model was not asked to answer: the judge's name or value check already says not found"
        )
    if not verdict.found:
        return Answer(
            question,
            False,
            _not_found(question, verdict),
            [],
            queries,
            method,
            verdict.to_dict(),
            closest,
            notes,
        )
    # the first passage's sentences always; the others' when they reach the judge's bar themselves
    quoted = [(s, p) for s, p in chosen if p is chosen[0][1] or s.support >= verdict.threshold or kind]
    citations = [_cite(p, s) for s, p in quoted]
    text = " ".join(s.text for s, _ in quoted)
    graph = sources.entity_graph()
    by_support = sorted((s for s, _ in quoted), key=lambda s: -s.support)  # the best evidence first
    lead = lead_line(question, kind, [s.text for s in by_support], lambda key: graph.lookup(key) is not None)
    return Answer(question, True, text, citations, queries, method, verdict.to_dict(), closest, notes, lead)


def _vetoed(verdict) -> bool:
    """What no model may overrule: the question's names never meet in one passage, or it asks for a
    value no passage on its subject states. (Whether the passages say enough otherwise is the
    model's call when one is configured: it reads paraphrase better than the support threshold.)"""
    return bool(verdict.missing_names) or (verdict.answer_type is not None and not verdict.value_stated)


def choose_sentences(passages, kind: str | None) -> list:
    """The (sentence, passage) pairs an extractive answer quotes.

    - For a question asking for a value (`kind`), the sentences that state one on the question's
      topic, best supported first, from the VALUE_DEPTH passages the angles rank highest.
    - Otherwise the ANSWER_DEPTH passages whose best sentences support the question most (the
      support counts the passage's place in the angles' ranking), one per section, in that order,
      each with its best sentence and its runner-up when that supports nearly as well (the subject
      in one sentence, what happened to it in the next). Passages are not required to name the
      question's people (a diary says "I", not its writer's name); the judge asks that the names
      meet somewhere."""
    if kind is not None:
        stating = sorted(
            ((s, p) for p in passages[:VALUE_DEPTH] for s in p.sentences if s.states),
            key=lambda sp: (-sp[0].support, sp[1].chunk_id),
        )
        chosen, seen = [], set()
        for sentence, passage in stating:
            if passage.chunk_id not in seen and len(chosen) < MAX_SENTENCES:
                seen.add(passage.chunk_id)
                chosen.append((sentence, passage))
        return chosen
    chosen = []
    for best, passage in one_per_section(by_best_sentence(passages))[:ANSWER_DEPTH]:
        ranked = sorted(passage.sentences, key=lambda s: -s.support)[:PER_PASSAGE]
        close = [s for s in ranked if s.support >= NEAR_BEST * best.support]
        chosen.extend((s, passage) for s in sorted(close, key=lambda s: passage.sentences.index(s)))
    return chosen


def in_one_document(chosen, names: list[str], forms=None) -> list:
    """The chosen (sentence, passage) pairs that stay in the document of the best one: the place is
    chosen first (its document, then its sections by how well they support the question). A passage
    from another document (another book, another file) is quoted only when it names every one of the
    question's names, so a question about one book's people never cites a sentence from another
    book, and a question that names no one stays in one document."""
    if not chosen:
        return chosen
    home = chosen[0][1].path
    return [(s, p) for s, p in chosen if p.path == home or (names and not missing_names(p, names, forms))]


def one_per_section(ranked) -> list:
    """The best passage of each section (heading path), in order: a second passage from a section
    already quoted adds no new place to read, while the next section's best may be the right one."""
    first: dict[str, tuple] = {}
    for best, passage in ranked:
        first.setdefault(passage.heading, (best, passage))
    return list(first.values())


def by_best_sentence(passages) -> list:
    """(best sentence, passage) for every passage with a sentence, best supported first: the order
    the answer quotes passages in and lists the closest ones in."""
    bests = [(p.best(), p) for p in passages]
    return sorted(((b, p) for b, p in bests if b is not None), key=lambda bp: -bp[0].support)


def _embedder(sources: AnswerSources, notes: list[str]):
    """Sentences' vectors, each embedded once per process: questions about one corpus gather many of
    the same passages, and embedding their sentences is most of an answer's time. The vectors live
    in the index's bounded cache (KENNING_CACHE_MB), keyed by the model's fingerprint and the text."""
    try:
        embedder = sources.embedder()
    except Exception as exc:
        notes.append(f"sentences scored by words only: {exc}")
        return None
    cache, model = sources.cache, embedder.fingerprint()

    def embed(texts: list[str]) -> np.ndarray:
        keys = [("text-vector", model, text) for text in texts]
        vectors = [cache.get(key) for key in keys]
        todo = [i for i, v in enumerate(vectors) if v is None]
        if todo:
            fresh = embedder.embed([texts[i] for i in todo], kind="document")
            for i, vector in zip(todo, fresh, strict=True):
                vectors[i] = vector
                cache.put(keys[i], vector, vector.nbytes + len(texts[i]) + 160)
        return np.vstack(vectors) if vectors else np.zeros((0, embedder.dim), dtype=np.float32)

    return embed


def _cite(passage, sentence) -> Citation:
    quote = sentence.text if len(sentence.text) <= QUOTE_CHARS else sentence.text[: QUOTE_CHARS - 1] + "…"
    return Citation(
        passage.path,
        passage.heading,
        sentence.start_line,
        sentence.end_line,
        quote,
        passage.chunk_id,
        passage.page,
        passage.page_end,
    )


def _closest(passages, n: int = 3) -> list[Citation]:
    return [_cite(p, b) for b, p in by_best_sentence(passages)[:n]]


_KIND_WORDS = {"money": "amount", "duration": "length of time"}


def _not_found(question: str, verdict) -> str:
    if verdict.missing_names:
        names = ", ".join(repr(n) for n in verdict.missing_names)
        return (
            f"The indexed sources do not answer this: no passage about {names} says what the question asks."
        )
    if verdict.answer_type is not None and not verdict.value_stated:
        return (
            f"The indexed sources do not answer this: no passage on the question's subject states the "
            f"{_KIND_WORDS.get(verdict.answer_type, verdict.answer_type)} it asks for."
        )
    if verdict.missing_terms:
        terms = ", ".join(repr(t) for t in verdict.missing_terms[:4])
        return (
            "The indexed sources do not answer this: the closest passages do not mention "
            f"{terms} together with the rest of the question."
        )
    return "The indexed sources do not answer this: no passage holds enough of the question."


def _with_model(llm, question, passages, queries, verdict, closest, notes) -> Answer:
    method = f"llm:{llm.name}"
    numbered = "\n\n".join(
        f"[{i}] {p.heading} ({location_text(p.path, p.start_line, p.end_line, p.page, p.page_end)})\n"
        f"{p.body[:2000]}"
        for i, p in enumerate(passages, 1)
    )
    reply = llm.complete(
        [
            {"role": "system", "content": ANSWER_PROMPT},
            {"role": "user", "content": f"Question: {question}\n\nPassages:\n{numbered}"},
        ]
    ).strip()
    judged = verdict.to_dict() | {"model_found": not reply.upper().startswith("NOT FOUND")}
    if reply.upper().startswith("NOT FOUND"):
        statement = reply.split(":", 1)[1].strip() if ":" in reply else "The passages do not answer this."
        return Answer(question, False, statement, [], queries, method, judged, closest, notes)
    sentences, citations, said = [], [], set()
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"“])", reply):
        key = " ".join(sentence.split()).casefold()
        if any(earlier.startswith(key) for earlier in said):  # small models repeat themselves
            continue
        said.add(key)
        cited = [int(n) for n in re.findall(r"\[(\d+)\]", sentence) if 1 <= int(n) <= len(passages)]
        if not cited:
            grounded = _attribute(sentence, passages)
            if grounded is None:
                notes.append(f"dropped a sentence without a citation: {sentence[:80]!r}")
                continue
            passage, quoted = grounded
            notes.append(f"cited an uncited sentence by the passage that holds its words: {sentence[:80]!r}")
            sentences.append(sentence)
            citations.append(_cite(passage, quoted))
            continue
        sentences.append(sentence)
        for n in dict.fromkeys(cited):
            citations.append(_cite(passages[n - 1], _closest_sentence(passages[n - 1], sentence)))
    citations = list({(c.chunk_id, c.start_line, c.quote): c for c in citations}.values())
    if not sentences:
        return Answer(
            question,
            False,
            "The model's answer cited no passage.",
            [],
            queries,
            method,
            judged,
            closest,
            notes,
        )
    lead = re.sub(r"\s*\[\d+\]", "", sentences[0]).strip()
    return Answer(
        question, True, " ".join(sentences), citations, queries, method, judged, closest, notes, lead
    )


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", fold(text)) if len(w) > 2 and w not in ENGLISH_QUERY_STOPWORDS}


def _attribute(sentence: str, passages):
    """A model sentence without a citation (small local models often leave them out) is kept only
    when one place in the passages holds nearly all of its words (ATTRIBUTION_SHARE of them, in a
    sentence and the next): then that place is its citation. Anything else is the model's own and
    is dropped."""
    words = _content_words(re.sub(r"\[\d+\]", " ", sentence))
    if len(words) < 3:
        return None
    best = None
    for passage in passages:
        held = [_content_words(s.text) for s in passage.sentences]
        for i, here in enumerate(held):
            following = held[i + 1] if i + 1 < len(held) else set()
            share = len(words & (here | following)) / len(words)
            if best is None or share > best[0]:
                # quote whichever of the two holds more of the sentence's words
                quoted = i + 1 if len(words & following) > len(words & here) else i
                best = (share, passage, passage.sentences[quoted])
    if best is None or best[0] < ATTRIBUTION_SHARE:
        return None
    return best[1], best[2]


def _closest_sentence(passage, text: str):
    """The passage's sentence sharing the most words with an answer sentence: the quoted words."""
    words = set(re.findall(r"\w+", text.lower()))
    return max(
        passage.sentences or [],
        key=lambda s: len(words & set(re.findall(r"\w+", s.text.lower()))),
        default=None,
    ) or _whole(passage)


def _whole(passage):
    return Sentence(" ".join(passage.body.split())[:QUOTE_CHARS], passage.start_line, passage.end_line)
