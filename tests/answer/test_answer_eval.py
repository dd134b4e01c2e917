"""The answer benchmark's scoring (benchmarks/answer_eval.py) and its question sets."""

import json
import sys

from locations import BENCHMARKS, BOOKS

sys.path.insert(0, str(BENCHMARKS))

from answer_eval import in_chapter, load_questions, score  # noqa: E402


def test_a_citation_counts_when_its_heading_path_names_a_right_chapter():
    assert in_chapter("Dracula > CHAPTER V", ["CHAPTER V"])
    assert not in_chapter("Dracula > CHAPTER XV", ["CHAPTER V"])  # a whole path part, not a substring


def test_the_three_rates():
    records = [
        {"answerable": True, "found": True, "cited_right": True, "first_cited_right": True},
        {"answerable": True, "found": True, "cited_right": True, "first_cited_right": False},
        {"answerable": True, "found": True, "cited_right": False, "first_cited_right": False},
        {"answerable": True, "found": False, "cited_right": False, "first_cited_right": False},
        {"answerable": False, "found": False, "cited_right": False, "first_cited_right": False},
        {"answerable": False, "found": True, "cited_right": False, "first_cited_right": False},
    ]
    for r in records:
        r["closest_right"] = r["cited_right"]
    rates = score(records)
    assert abs(rates["citation_hit"] - 2 / 3) < 1e-9 and abs(rates["first_citation_hit"] - 1 / 3) < 1e-9
    assert rates["not_found_recall"] == 0.5
    assert rates["false_not_found"] == 0.25


def test_the_question_sets_hold_what_the_issue_asks_and_quote_the_books():
    for name, book in (
        ("dracula_questions.jsonl", "dracula.md"),
        ("monte_cristo_questions.jsonl", "monte-cristo.md"),
    ):
        questions = load_questions(BENCHMARKS / "data" / name)
        answerable = [q for q in questions if q["answerable"]]
        assert len(answerable) >= 30 and len(questions) - len(answerable) >= 15
        text = (BOOKS / book).read_text()
        headings = {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")}
        for q in answerable:
            assert q["evidence"] in text, q["id"]
            assert set(q["chapters"]) <= headings, q["id"]
        assert len({q["id"] for q in questions}) == len(questions)
        assert all(json.dumps(q) for q in questions)
