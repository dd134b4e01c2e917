"""Query feedback's document frequencies with deleted chunks still held by their segments.

Feedback weighs its candidate terms by idf and counts their document frequencies from the size of
the stored rows, deleted chunks included until a merge drops them (LexicalView.term_counts), as
Lucene and tantivy do. This measures what that costs in the worst case the dev sets allow: each
corpus is indexed together with a copy of 30% of its documents (other ids), the copy is deleted
(its chunks stay in the segments, 23% of those held), and every judged query runs in hybrid mode
twice: with the shipped counts, and with exact live counts read from the postings.

    python benchmarks/feedback_deleted.py \\
        ../shared/data/cranfield ../shared/data/cacm ../shared/data/msmarco-5k

Indexes go to --work (default: a folder in the system's temporary directory), kept between runs.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

from kenning import Index
from kenning.eval.beir import load_beir, ndcg_at, ranked_doc_keys
from kenning.lexical.bm25 import Bm25Params
from kenning.lexical.view import LexicalView

GHOST_SHARE = 0.3


def live_counts(view: LexicalView, terms: list[str]) -> tuple[int, dict[str, int]]:
    """Exact: the live chunks, and each term's live postings (reads every term's postings)."""
    found = view.postings(terms)
    return view.n_docs, {t: (p.df if p else 0) for t, p in found.items()}


def build(dataset: Path, work: Path) -> Index:
    """The corpus and a deleted copy of GHOST_SHARE of its documents, embedded (once per --work)."""
    folder = work / dataset.name
    if not (folder / "index").exists():
        docs = folder / "docs"
        docs.mkdir(parents=True, exist_ok=True)
        lines = [line for line in (dataset / "corpus.jsonl").read_text().split("\n") if line.strip()]
        (docs / "corpus.jsonl").write_text("\n".join(lines) + "\n")
        ghost = []
        for line in random.Random(0).sample(lines, int(len(lines) * GHOST_SHARE)):
            doc = json.loads(line)
            doc["_id"] = "ghost-" + doc["_id"]
            ghost.append(json.dumps(doc))
        (docs / "ghost.jsonl").write_text("\n".join(ghost) + "\n")
        with Index(folder / "index") as index:
            index.add([docs])
            (docs / "ghost.jsonl").unlink()
            index.add([docs])
            index.embed()
    return Index(folder / "index")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="+", type=Path)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "kenning-feedback-deleted")
    args = ap.parse_args()
    shipped = LexicalView.term_counts
    for dataset in args.datasets:
        data = load_beir(dataset)
        with build(dataset, args.work) as index:
            with index.store.reading():
                view = index.lexical.view()
                held, _ = view.term_counts([])
            scores = {}
            for label, counts in (("held counts (shipped)", shipped), ("live counts", live_counts)):
                LexicalView.term_counts = counts
                runs = [
                    ndcg_at(ranked_doc_keys(index, text, 100, Bm25Params(), "hybrid"), data.qrels[qid])
                    for qid, text in data.queries.items()
                ]
                scores[label] = sum(runs) / len(runs)
            LexicalView.term_counts = shipped
        print(
            f"{dataset.name}: {held} chunks held, {view.n_docs} live; hybrid nDCG@10 "
            + ", ".join(f"{k} {v:.4f}" for k, v in scores.items())
        )


if __name__ == "__main__":
    main()
