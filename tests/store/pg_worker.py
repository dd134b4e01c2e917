"""Processes for tests/store/test_postgres_concurrency.py: a writer committing files one at a time, and a
reader checking that every search sees whole commits. Run as a script: separate processes, separate
connections, as real users would be."""

import json
import sys
import time
from pathlib import Path

from kenning import Index

SECTIONS = 4


def note(tag: str, n: int) -> str:
    parts = [f"# {tag} {n}\n"]
    for s in range(SECTIONS):
        parts.append(f"\n## Part {s}\n\nzebra {tag} file {n} part {s}, quite a long sentence to index.\n")
    return "".join(parts)


def writer(url: str, folder: str, tag: str, files: int, collection: str) -> None:
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    with Index(url) as index:
        for n in range(files):
            (root / f"{tag}-{n:02d}.md").write_text(note(tag, n))
            report = index.add([root], collection=collection)  # one commit per file
            assert not report.errors, report.errors


def reader(url: str, seconds: float) -> None:
    """Search until `seconds` pass; print each observation: chunks per file, and the status counts."""
    seen = []
    deadline = time.time() + seconds
    with Index(url) as index:
        while time.time() < deadline:
            per_file: dict[str, int] = {}
            for hit in index.search("zebra", mode="lexical", limit=1000).hits:
                per_file[Path(hit.path).name] = per_file.get(Path(hit.path).name, 0) + 1
            status = index.status()
            seen.append({"files": per_file, "sources": status["sources"], "chunks": status["live_chunks"]})
    print(json.dumps(seen))


if __name__ == "__main__":
    role, *rest = sys.argv[1:]
    if role == "writer":
        writer(rest[0], rest[1], rest[2], int(rest[3]), rest[4])
    else:
        reader(rest[0], float(rest[1]))
