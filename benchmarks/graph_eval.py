"""Precision of the entity graph's neighbours against a labelled list of true partners.

The labels (benchmarks/data/dracula_entity_partners.json) name, for 20 central entities of Dracula,
the people and places each one acts with or is tied to in the story. The book is indexed (no vectors
needed) into a cache folder once; for every labelled entity, `kenning graph ENTITY --limit 10` gives
its strongest neighbours, and a neighbour is right when its key, or any key merged into it, is
labelled. The mean precision@10 over the entities is the figure; each entity's wrong neighbours are
printed so a reader can see what kind of mistake remains.

    python benchmarks/graph_eval.py --book ../shared/data/books/dracula.md [--scoring relatedness] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

from kenning import Index
from kenning.analysis.analyzer import fold

LABELS = Path(__file__).parent / "data" / "dracula_entity_partners.json"


def open_book(book: Path) -> Index:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kenning" / "graph"
    digest = hashlib.sha1(str(book.resolve()).encode()).hexdigest()[:10]
    index = Index(base / f"{book.stem}-{digest}")
    index.add([book])
    return index


def partners(labels: dict, entity: str) -> set[str]:
    out: set[str] = set()
    for item in labels["entities"][entity]:
        out |= set(labels["CAST"]) if item == "CAST" else {item}
    return {fold(k) for k in out}


def neighbour_keys(neighbour: dict) -> set[str]:
    return {neighbour["entity"], *neighbour.get("members", [])}


def evaluate(index: Index, labels: dict, depth: int = 10, scoring: str = "relatedness") -> dict:
    rows = []
    for entity in labels["entities"]:
        right = partners(labels, entity)
        try:
            found = index.entity_neighbours(entity, depth, scoring)
        except ValueError as exc:
            rows.append(
                {"entity": entity, "precision": 0.0, "error": str(exc), "wrong": [], "neighbours": []}
            )
            continue
        listed = found["neighbours"][:depth]
        hits = [bool(neighbour_keys(n) & right) for n in listed]
        rows.append(
            {
                "entity": entity,
                "precision": sum(hits) / depth,
                "neighbours": [n["surface"] for n in listed],
                "wrong": [n["surface"] for n, hit in zip(listed, hits, strict=True) if not hit],
            }
        )
    return {
        "depth": depth,
        "scoring": scoring,
        "precision": sum(r["precision"] for r in rows) / len(rows),
        "entities": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--book", required=True, type=Path)
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--scoring", default="relatedness")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.book.is_file():
        ap.error(f"--book {args.book}: no such file")
    labels = json.loads(args.labels.read_text())
    with open_book(args.book) as index:
        report = evaluate(index, labels, args.depth, args.scoring)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return
    count = len(report["entities"])
    print(
        f"precision@{report['depth']} ({report['scoring']}): {report['precision']:.3f} over {count} entities"
    )
    for row in report["entities"]:
        wrong = ", ".join(row["wrong"]) or row.get("error", "")
        print(f"  {row['entity']:<16} {row['precision']:.1f}  wrong: {wrong}")


if __name__ == "__main__":
    main()
