"""How far can the extractive answerer's choice of passages go with the evidence it already has?

For every answerable question of one or more books this gathers the passages of every angle of the
plan (each angle searched at the answerer's depth, fused by reciprocal rank as kenning.answer.evidence
does, but not cut), scores their sentences as the answerer does, and reports:

- pool: the share of questions with a right-chapter passage among the first `--pool` fused passages
  (what the answerer reads);
- shipped: the share with one among the three passages the shipped support ranks first (the
  answerer's citations for a question asking for no typed value);
- per-angle top m: the pool rebuilt from every angle's first m passages, then the fused order;
- learned: a pairwise logistic model over twelve passage features (the best sentence's support and
  its parts, the largest window cosine and word share, the fused rank, each angle's rank), trained
  on one book and tested on each book, the same book included (an upper bound for these features).

    python benchmarks/answer_ceiling.py --book ../shared/data/books/dracula.md \\
        --questions benchmarks/data/dracula_questions.jsonl \\
        --book ../shared/data/books/monte-cristo.md --questions benchmarks/data/monte_cristo_questions.jsonl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from answer_eval import in_chapter, load_questions, open_book  # noqa: E402

from kenning.answer.answer_type import question_type  # noqa: E402
from kenning.answer.answering import _embedder  # noqa: E402
from kenning.answer.evidence import RRF_K, Passage, passage_count, score_sentences  # noqa: E402
from kenning.answer.planner import plan_angles, question_names  # noqa: E402


def angle_pool(index, angles, depth: int) -> tuple[list[Passage], dict[int, dict[str, int]]]:
    """Every passage any angle finds at `depth`, in fused order, and each one's rank in each angle."""
    fused: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    for angle in angles:
        hits = index.search(angle.text, limit=depth, mode=angle.mode, detail="heads", syntax="plain").hits
        for rank, hit in enumerate(dict.fromkeys(h.id for h in hits), 1):
            fused[hit] = fused.get(hit, 0.0) + angle.weight / (RRF_K + rank)
            ranks.setdefault(hit, {}).setdefault(f"{angle.kind}/{angle.mode}", rank)
    order = sorted(fused, key=lambda c: (-fused[c], c))
    with index.store.reading():
        rows = index.store.chunks_by_ids(order)
    passages = [
        Passage(c, r.path, r.title, r.start_line, r.end_line, r.body, fused[c], [])
        for c in order
        if (r := rows.get(c)) is not None
    ]
    return passages, ranks


def collect(book: Path, questions: Path, depth: int) -> list[dict]:
    """Per answerable question: its passages' features and whether each lies in a right chapter."""
    out = []
    with open_book(book) as index:
        embed = _embedder(index, [])
        for q in (q for q in load_questions(questions) if q["answerable"]):
            angles = plan_angles(index, q["question"], True)
            passages, ranks = angle_pool(index, angles, depth)
            names = question_names(index, q["question"])
            score_sentences(index, q["question"], passages, embed, names, question_type(q["question"]))
            out.append(
                {
                    "kinds": sorted({k for r in ranks.values() for k in r}),
                    "passages": [
                        {
                            "right": in_chapter(p.heading, q["chapters"]),
                            "ranks": ranks.get(p.chunk_id, {}),
                            "sentences": [(s.words, s.window_words, s.cosine or 0.0) for s in p.sentences],
                        }
                        for p in passages
                    ],
                }
            )
    return out


ANGLES = ["question/hybrid", "question/lexical", "entities/lexical", "event/dense", "details/lexical"]


def features(passage: dict, place: int) -> list[float]:
    """The best sentence's support without the rank prior and its parts, the largest cosine and window
    share, the fused rank prior, and each angle's rank prior (0 when the angle did not find it)."""
    sentences = passage["sentences"] or [(0.0, 0.0, 0.0)]
    own = [0.45 * ww + 0.2 * w + 0.6 * c for w, ww, c in sentences]
    best = sentences[int(np.argmax(own))]
    ranks = passage["ranks"]
    return [
        max(own),
        best[1],
        best[0],
        best[2],
        max(c for _, _, c in sentences),
        max(ww for _, ww, _ in sentences),
        1 / (place + 1) ** 0.5,
        *[1 / ranks[a] ** 0.5 if a in ranks else 0.0 for a in ANGLES],
    ]


SHIPPED = np.array([1.0, 0, 0, 0, 0, 0, 0.4, 0, 0, 0, 0, 0])  # kenning.answer.evidence.Sentence.support


def pool(question: dict, size: int, per_angle: int = 0) -> list[dict]:
    passages = question["passages"]
    chosen = [p for p in passages if per_angle and min(p["ranks"].values(), default=99) <= per_angle]
    chosen += [p for p in passages if p not in chosen][: max(0, size - len(chosen))]
    return chosen


def top3(questions: list[dict], weights: np.ndarray, size: int, per_angle: int = 0) -> float:
    hits = []
    for q in questions:
        chosen = pool(q, size, per_angle)
        scores = [features(p, i) @ weights for i, p in enumerate(chosen)]
        order = np.argsort(-np.asarray(scores), kind="stable")[:3]
        hits.append(any(chosen[i]["right"] for i in order))
    return float(np.mean(hits))


def learn(questions: list[dict], size: int) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    pairs, labels = [], []
    for q in questions:
        rows = [(np.array(features(p, i)), p["right"]) for i, p in enumerate(pool(q, size))]
        for x, right in rows:
            for y, other in rows:
                if right and not other:
                    pairs += [x - y, y - x]
                    labels += [1, 0]
    if not pairs:
        return SHIPPED
    model = LogisticRegression(C=0.1, fit_intercept=False, max_iter=5000).fit(np.array(pairs), labels)
    return model.coef_[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--book", action="append", type=Path, required=True)
    ap.add_argument("--questions", action="append", type=Path, required=True)
    ap.add_argument("--pool", type=int, default=20, help="passages the answerer reads (its clamp)")
    args = ap.parse_args()
    if len(args.book) != len(args.questions):
        raise SystemExit("give one --questions per --book")
    depth = passage_count(args.pool)
    sets = {b.stem: collect(b, q, depth) for b, q in zip(args.book, args.questions, strict=True)}
    for name, qs in sets.items():
        in_pool = np.mean([any(p["right"] for p in pool(q, args.pool)) for q in qs])
        print(f"{name}: {len(qs)} answerable; right chapter in the pool of {args.pool}: {in_pool:.3f}")
        print(f"  shipped support, first three: {top3(qs, SHIPPED, args.pool):.3f}")
        for m in (1, 2, 3):
            print(f"  every angle's first {m}, then fused: {top3(qs, SHIPPED, args.pool, m):.3f}")
    for train, qs in sets.items():
        weights = learn(qs, args.pool)
        tested = "  ".join(f"{name} {top3(other, weights, args.pool):.3f}" for name, other in sets.items())
        print(f"learned on {train}, first three: {tested}")


if __name__ == "__main__":
    main()
