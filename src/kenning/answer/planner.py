"""The query planner: several angles on one question, so the passage that answers it is found even
when it shares few words with the question.

Lume's case study asks how a named character's father dies: the passage that answers it calls him
"the old man" and says he "died of starvation", while the names pull retrieval to passages about the
father alive. So besides the question as asked, the planner writes:

- entities: the names the question holds, on their own (the people and places it is about);
- event: the question without its names, searched by meaning when the index has vectors (what
  happens, in whatever words the text uses);
- details: the question's rarest words besides the names, searched by their words.

The question itself is searched twice, by hybrid search and by its words alone: on the answer dev
questions the words alone put a passage of a right chapter first more often on one book and about as
often on the other, and the two together beat either (docs/answers.md). The entity and event angles
cast wide (they find passages the question's words miss), so they count half in the fusion.

With a chat model configured, the model writes the angles (entities, the event in other words,
secondary details); the rule-based angles stand in when it fails.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kenning.analysis.analyzer import fold
from kenning.answer.sources import AnswerSources
from kenning.entities.extract import NOT_NAMES

# the entity and event angles' share in the fusion (the question and its details count 1)
WIDE_ANGLE_WEIGHT = 0.5
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# phrases that frame a question without naming its topic: "what became of X" asks about X, not about
# things that became something; "at the start of the novel" places it in a book every passage is in
_FRAMES = re.compile(
    r"\b(?:what (?:has |had )?(?:became|become|becomes) of"
    r"|what (?:has |had )?happen(?:s|ed)?(?= to| when| after)"
    r"|according(?= to)|at the (?:very )?(?:start|beginning|end|close) of the (?:novel|book|story|text))\b",
    re.IGNORECASE,
)
PLANNER_PROMPT = (
    "You write search queries for a question about a document collection. Return JSON only: "
    '{"queries": [q1, q2, q3]} where q1 names the entities (people, places, things) the question is '
    "about, q2 says the event or fact asked for in other words than the question (synonyms, how a "
    "narrator would put it), and q3 names secondary details or characters that would appear near the "
    "answer. Short keyword queries, no quotes."
)


@dataclass(frozen=True)
class Angle:
    text: str
    kind: str  # question, entities, event, details, model
    mode: str  # the search mode this angle runs in
    weight: float = 1.0  # how much its ranking counts when the angles are fused

    def to_dict(self) -> dict:
        return {"query": self.text, "angle": self.kind, "mode": self.mode, "weight": self.weight}


def without_frame(question: str) -> str:
    """The question without the phrases that frame it (_FRAMES): the words its topic is in."""
    return " ".join(_FRAMES.sub(" ", question).split())


def plan_angles(
    sources: AnswerSources, question: str, has_vectors: bool, llm=None, notes: list | None = None
) -> list[Angle]:
    """The question first, then the other angles (each distinct)."""
    words_mode = "hybrid" if has_vectors else "lexical"
    angles = [Angle(question, "question", words_mode)]
    if has_vectors:
        angles.append(Angle(without_frame(question), "question", "lexical"))
    extra = None
    if llm is not None:
        try:
            extra = _model_angles(llm, question, words_mode)
        except Exception as exc:  # a model that fails leaves the rule-based angles
            if notes is not None:
                notes.append(f"the planner model failed ({exc}); planned by rules")
    if extra is None:
        extra = rule_angles(sources, question, has_vectors)
    seen = {(a.text.casefold(), a.mode) for a in angles}
    for angle in extra:
        if angle.text.strip() and (angle.text.casefold(), angle.mode) not in seen:
            seen.add((angle.text.casefold(), angle.mode))
            angles.append(angle)
    return angles


def question_names(sources: AnswerSources, question: str) -> list[str]:
    """The names the question uses: entity keys of the index (a one-word name only where the
    question capitalises it), and capitalised words inside the question that the index does not know
    as entities at all ("Nemo"), which the judge then looks for like any name."""
    graph = sources.entity_graph()
    known = known_names(sources, question)
    covered = {w for key in known for w in key.split()}
    words = [re.sub(r"['’]s$", "", w) for w in _WORD.findall(question)[1:]]  # Curie's -> Curie
    unknown = [
        fold(w)
        for w in words
        if w[:1].isupper()
        and len(w) > 1  # an initial ("P.") is not a name to look for
        and fold(w) not in covered
        and fold(w) not in graph.index
        and fold(w) not in NOT_NAMES
    ]
    return known + list(dict.fromkeys(unknown))


def known_names(sources: AnswerSources, question: str) -> list[str]:
    """The index's entities the question names (a one-word name only where it is capitalised)."""
    graph = sources.entity_graph()
    if not len(graph):
        return []
    return graph.resolve(question, name_like=lambda key: _capitalised_in(question, key), as_written=True)


def rule_angles(sources: AnswerSources, question: str, has_vectors: bool) -> list[Angle]:
    analyzer = sources.analyzer
    words = [w for w in _WORD.findall(without_frame(question)) if not analyzer.is_stopword(w)]
    words = [re.sub(r"['’]s$", "", w) for w in words]
    graph = sources.entity_graph()
    names = known_names(sources, question)
    name_words = {w for key in names for w in key.split()}
    others = [w for w in words if fold(w) not in name_words]
    angles = []
    if names and others:
        surfaces = [graph.surface_of(k) for k in names]
        angles.append(Angle(" ".join(surfaces), "entities", "lexical", WIDE_ANGLE_WEIGHT))
    if others:
        event_mode = "dense" if has_vectors else "lexical"
        angles.append(Angle(" ".join(others), "event", event_mode, WIDE_ANGLE_WEIGHT))
    rare = sorted(others, key=lambda w: -_idf(sources, w))[:2]
    if rare and (names or len(others) > 2):
        lead = [graph.surface_of(names[0])] if names else []
        angles.append(Angle(" ".join(lead + rare), "details", "lexical"))
    return angles


def _capitalised_in(question: str, key: str) -> bool:
    """A one-word name counts when the question writes it with a capital (not "will", but "Will")."""
    words = [re.sub(r"['’]s$", "", w) for w in _WORD.findall(question)[1:]]  # Ada's -> Ada
    return any(fold(w) == key and w[:1].isupper() for w in words)


def _idf(sources: AnswerSources, word: str) -> float:
    terms = sources.analyzer.query_terms(word, remove_stopwords=False)
    return sources.idfs(terms[:1])[0] if terms else 0.0


def _model_angles(llm, question: str, mode: str) -> list[Angle]:
    answer = llm.complete(
        [{"role": "system", "content": PLANNER_PROMPT}, {"role": "user", "content": question}], max_tokens=200
    )
    match = re.search(r"\{.*\}", answer, re.S)
    queries = json.loads(match.group() if match else answer)["queries"]
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise ValueError("the planner model did not return a list of queries")
    return [Angle(q.strip(), "model", mode) for q in queries[:4] if q.strip()]
