"""Evaluate cited answers on a book's question set: citation hit rate, not-found recall, false not-found.

Each line of the question file is {"id", "question", "answerable", "chapters" (answerable only), ...}.
The book is indexed (and embedded) into a cache folder once; every question goes through
`kenning answer` (kenning.answer.answering) and is scored:

- citation hit rate: of the answerable questions answered, the share with a cited passage in one of
  the question's chapters (its heading path names the chapter); the first-citation hit rate counts
  only the answer's first citation;
- not-found recall: of the unanswerable questions (false premises, absent facts), the share answered
  "not found";
- false not-found rate: of the answerable questions, the share answered "not found";
- answer hit: of the answerable questions, the share whose one-line answer (Answer.lead) holds at
  least half of the gold answer's key words (its index terms), reported per question form beside
  the same measure on the first cited sentence.

--sweep also reports the three numbers for every judge threshold, from the same run (the judge's
support and missing names are recorded per question), so a threshold chosen on one book can be
checked on another, and how well each part of the support separates answerable from unanswerable
questions (AUC):

    python benchmarks/answer_eval.py --questions benchmarks/data/dracula_questions.jsonl \\
        --book ../shared/data/books/dracula.md [--beside ../shared/data/books/monte-cristo.md] \\
        [--sweep] [--graph 0.4] [--json]

--beside indexes other books with the question's book, as a reader's library would hold them: a
citation in another book is never right, and the share of answers citing one is reported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path

from kenning import Index
from kenning.answer.answering import answer_question
from kenning.answer.judge import MIN_SUPPORT
from kenning.answer.lead import question_form
from kenning.models.chat import make_chat_model


def open_book(book: Path, embedder: str | None = None, beside: list[Path] = ()) -> Index:
    """The book's index (with `beside`: other books indexed with it, as distractors)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kenning" / "answers"
    key = "\n".join(str(b.resolve()) for b in [book, *beside])
    digest = hashlib.sha1(key.encode()).hexdigest()[:10]
    index = Index(base / f"{book.stem}-{digest}")
    index.add([book, *beside])
    index.embed(embedder)
    return index


def load_questions(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        if row["answerable"] and not row.get("chapters"):
            raise SystemExit(f"{path}: question {row['id']} is answerable but names no chapter")
    return rows


def in_chapter(heading: str, chapters: list[str]) -> bool:
    parts = [p.strip().casefold() for p in heading.split(">")]
    return any(c.strip().casefold() in parts for c in chapters)


def run(
    index: Index, questions: list[dict], llm=None, candidates: int = 20, book: str | None = None, **search
) -> list[dict]:
    """Every question answered and scored. `book`: the file name the questions are about, when other
    books are indexed beside it (a citation in another book is never right, and is counted)."""
    out = []
    sources = index.answer_sources(**search)
    analyzer = index.analyzer
    for q in questions:
        started = time.perf_counter()
        answer = answer_question(sources, q["question"], llm=llm, candidates=candidates)
        chapters = q.get("chapters", [])

        def right(c, chapters=chapters) -> bool:
            return (book is None or Path(c.path).name == book) and in_chapter(c.heading, chapters)

        record = {
            "id": q["id"],
            "answerable": q["answerable"],
            "found": answer.found,
            "support": answer.judge["support"],
            "missing_names": answer.judge["missing_names"],
            "cosine": answer.judge["cosine"],
            "window_words": answer.judge["window_words"],
            "passage_rank": answer.judge["passage_rank"],
            "answer_type": answer.judge["answer_type"],
            "value_stated": answer.judge["value_stated"],
            "seconds": time.perf_counter() - started,
            "cited_right": any(right(c) for c in answer.citations),
            "first_cited_right": bool(answer.citations) and right(answer.citations[0]),
            "closest_right": any(right(c) for c in answer.closest),
            "other_book_cited": book is not None and any(Path(c.path).name != book for c in answer.citations),
            "form": question_form(q["question"]),
            "lead": answer.lead,
            "answer_hit": answer.found and answer_hit(analyzer, q.get("answer"), answer.lead),
            "sentence_hit": answer.found
            and answer_hit(analyzer, q.get("answer"), answer.citations[0].quote if answer.citations else ""),
        }
        out.append(record)
    return out


def answer_hit(analyzer, gold: str | None, lead: str) -> bool:
    """Whether the one-line answer holds the gold answer's key words: at least half of its index terms
    (stemmed, stopwords dropped), so "Three" hits "Three", "A band of Szgany" hits "the Szgany"."""
    if not gold or not lead:
        return False
    wanted = set(analyzer.query_terms(gold))
    return bool(wanted) and len(wanted & set(analyzer.terms(lead))) >= len(wanted) / 2


def by_form(records: list[dict]) -> dict[str, dict]:
    """Answer hit (the lead) and sentence hit (the first cited sentence) of the answerable questions,
    per question form."""
    out: dict[str, dict] = {}
    for r in records:
        if r["answerable"]:
            row = out.setdefault(r["form"], {"questions": 0, "answer_hit": 0, "sentence_hit": 0})
            row["questions"] += 1
            row["answer_hit"] += bool(r["answer_hit"])
            row["sentence_hit"] += bool(r["sentence_hit"])
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["questions"]))


def score(records: list[dict], decide=None) -> dict:
    """The three rates; `decide(record)` re-judges found/not found (for the threshold sweep)."""
    decide = decide or (lambda r: r["found"])
    answerable = [r for r in records if r["answerable"]]
    unanswerable = [r for r in records if not r["answerable"]]
    answered = [r for r in answerable if decide(r)]
    # a question the run answered "not found" but a sweep answers: its closest passages stand in for
    # the citations it would have had (an approximation, for the sweep only)
    right = [r["cited_right"] if r["found"] else r["closest_right"] for r in answered]
    first = [r["first_cited_right"] if r["found"] else r["closest_right"] for r in answered]
    return {
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "citation_hit": sum(right) / len(answered) if answered else 0.0,
        "first_citation_hit": sum(first) / len(answered) if answered else 0.0,
        "not_found_recall": (
            sum(not decide(r) for r in unanswerable) / len(unanswerable) if unanswerable else 0.0
        ),
        "false_not_found": sum(not decide(r) for r in answerable) / len(answerable) if answerable else 0.0,
        "evidence_in_right_chapter": sum(r["closest_right"] for r in answerable) / max(1, len(answerable)),
        "answer_hit": sum(bool(r.get("answer_hit")) for r in answerable) / max(1, len(answerable)),
        "sentence_hit": sum(bool(r.get("sentence_hit")) for r in answerable) / max(1, len(answerable)),
        "other_book_cited": sum(bool(r.get("other_book_cited")) for r in records if r["found"])
        / max(1, sum(r["found"] for r in records)),
    }


def sweep(records: list[dict]) -> list[dict]:
    rows = []
    for t in [x / 100 for x in range(20, 96, 5)]:

        def decide(r, t=t):  # a typed question is judged by the value, not the threshold
            if r["answer_type"] is not None:
                return r["value_stated"] and not r["missing_names"]
            return r["support"] >= t and not r["missing_names"]

        rates = score(records, decide)
        rates["balanced"] = rates["not_found_recall"] + 1 - rates["false_not_found"]
        rows.append({"threshold": t} | rates)
    return rows


def separation(records: list[dict]) -> dict[str, float]:
    """How well each part of the best sentence's support tells answerable from unanswerable questions,
    among those whose names the passages all hold (the rest the name check decides): the probability
    that an answerable question scores above an unanswerable one (AUC; 0.5 is chance)."""
    named = [r for r in records if not r["missing_names"]]
    out = {}
    for key, sign in (("support", 1), ("cosine", 1), ("window_words", 1), ("passage_rank", -1)):
        pos = [sign * (r[key] or 0.0) for r in named if r["answerable"]]
        neg = [sign * (r[key] or 0.0) for r in named if not r["answerable"]]
        if pos and neg:
            out[key] = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", required=True, type=Path)
    ap.add_argument("--book", required=True, type=Path)
    ap.add_argument("--llm", help="a chat model spec (default: extractive)")
    ap.add_argument("--candidates", type=int, default=20)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--graph", type=float, help="weight of the entity graph signal in every search (w_graph)")
    ap.add_argument("--embedder", help="embedder spec for the book's vectors (default: minilm)")
    ap.add_argument(
        "--beside", type=Path, action="append", default=[], help="another book indexed with it (repeatable)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for book in [args.book, *args.beside]:  # an index of nothing would score every question "not found"
        if not book.is_file():
            ap.error(f"{book}: no such file")
    questions = load_questions(args.questions)
    with open_book(args.book, args.embedder, args.beside) as index:
        search = {"w_graph": args.graph} if args.graph is not None else {}
        book = args.book.name if args.beside else None
        records = run(index, questions, make_chat_model(args.llm), args.candidates, book, **search)
    report = {
        "book": args.book.name,
        "beside": [b.name for b in args.beside],
        "method": args.llm or "extractive",
        "w_graph": args.graph,
        "threshold": MIN_SUPPORT["vectors"],
        "seconds_per_question": sum(r["seconds"] for r in records) / max(1, len(records)),
    } | score(records)
    if args.sweep:
        report["sweep"] = sweep(records)
        report["separation"] = separation(records)
    if args.json:
        print(json.dumps(report | {"per_question": records}, indent=2))
        return
    print(
        f"{report['book']}{' beside ' + ', '.join(report['beside']) if report['beside'] else ''} "
        f"({report['method']}, threshold {report['threshold']}): "
        f"{report['answerable']} answerable, {report['unanswerable']} unanswerable, "
        f"{report['seconds_per_question']:.2f} s per question"
    )
    print(
        f"  citation hit {report['citation_hit']:.3f}   not-found recall {report['not_found_recall']:.3f}   "
        f"false not-found {report['false_not_found']:.3f}   "
        f"first citation hit {report['first_citation_hit']:.3f}   "
        f"(a right-chapter passage among the closest: {report['evidence_in_right_chapter']:.3f})"
    )
    if report["beside"]:
        print(f"  answers citing another book: {report['other_book_cited']:.3f}")
    print(
        f"  answer hit {report['answer_hit']:.3f} (the one-line answer holds the gold answer's key words; "
        f"the first cited sentence alone: {report['sentence_hit']:.3f}), by question form:"
    )
    for form, row in by_form(records).items():
        n = row["questions"]
        hits = f"answer hit {row['answer_hit'] / n:.3f}  sentence {row['sentence_hit'] / n:.3f}"
        print(f"    {form:<9} {n:>3} questions  {hits}")
    if "separation" in report:
        parts = "  ".join(f"{k} {v:.3f}" for k, v in report["separation"].items())
        print(f"  AUC, answerable over unanswerable, where every name is found: {parts}")
    for row in report.get("sweep", []):
        print(
            f"  threshold {row['threshold']:.2f}: citation hit {row['citation_hit']:.3f}  "
            f"not-found recall {row['not_found_recall']:.3f}  false not-found {row['false_not_found']:.3f}  "
            f"balanced {row['balanced']:.3f}"
        )


if __name__ == "__main__":
    main()
