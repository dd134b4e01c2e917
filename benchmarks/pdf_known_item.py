"""Known-item search on a folder of PDFs: lines taken from the PDFs' own text (whole, or a span of
--words words, as a reader remembers a phrase) are searched lexically; a query is a hit at 1 when the
first result's text holds it. Also prints the heading paths of the first chunks of each PDF, to read
how kenning cut them (kenning.ingest.pdf: sections from the outline, else from detected headings,
else pages).

    python benchmarks/pdf_known_item.py /usr/share/doc/shared-mime-info /usr/share/doc/libtasn1-doc \\
        [--queries 200] [--words 4] [--seed 7] [--show 10]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import tempfile
from pathlib import Path

from kenning import Index


def normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def pdf_lines(pdfs: list[Path]) -> list[str]:
    """The lines of eight words or more in the PDFs' text layer (PDFium's, as kenning reads it)."""
    import pypdfium2 as pdfium

    lines = []
    for path in pdfs:
        document = pdfium.PdfDocument(str(path))
        try:
            for index in range(len(document)):
                text = document[index].get_textpage().get_text_range()
                lines += [ln.strip() for ln in text.replace("\r", "").split("\n") if len(ln.split()) >= 8]
        finally:
            document.close()
    return [line for line in lines if len(normal(line)) > 40]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--words", type=int, default=0, help="a span of this many words per line (0: the line)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--show", type=int, default=10, help="heading paths printed per PDF")
    args = parser.parse_args()
    pdfs = sorted(p for folder in args.folders for p in folder.rglob("*.pdf"))
    if not pdfs:
        parser.error("no PDF in those folders")
    rng = random.Random(args.seed)
    lines = pdf_lines(pdfs)
    queries = rng.sample(lines, min(args.queries, len(lines)))
    if args.words:
        spans = []
        for line in queries:
            words = line.split()
            start = rng.randrange(max(1, len(words) - args.words + 1))
            spans.append(" ".join(words[start : start + args.words]))
        queries = spans
    work = Path(tempfile.mkdtemp())
    try:
        for pdf in pdfs:
            shutil.copy(pdf, work / pdf.name)
        with Index(work / ".ix") as index:
            index.add([work])
            hits = mrr = 0.0
            for query in queries:
                ranked = index.search(query, limit=10, mode="lexical").hits
                rows = index.store.chunks_by_ids([h.id for h in ranked])
                holds = [r for r, h in enumerate(ranked, 1) if normal(query) in normal(rows[h.id].body)]
                if holds:
                    hits += holds[0] == 1
                    mrr += 1 / holds[0]
            with index.store.reading():
                chunks = index.store.chunks_by_ids(sorted(index.store.read_snapshot().live))
        print(
            json.dumps(
                {
                    "pdfs": len(pdfs),
                    "queries": len(queries),
                    "words": args.words or "line",
                    "hit_at_1": round(hits / len(queries), 3),
                    "mrr_at_10": round(mrr / len(queries), 3),
                }
            )
        )
        for pdf in pdfs:
            print(pdf.name)
            own = [c for c in chunks.values() if Path(c.path).name == pdf.name][: args.show]
            for c in own:
                end = c.meta.get("page_end") if isinstance(c.meta, dict) else None
                pages = f"pp.{c.page}-{end}" if end else f"p.{c.page}"
                print(f"  {pages:<9} {c.title}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
