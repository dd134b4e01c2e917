"""Which unit a chat log is retrieved by: windows of 8 messages (the default), of 4, or single
messages, measured by whether the message a reader looks for is shown, marked, in the first hit.

There is no public chat corpus in the dev data, so a novel is read as one: each sentence a message,
each paragraph one sender's turn (three senders in turn), each chapter a conversation, a minute
between messages. Two kinds of query, drawn from random messages:

- `phrase`: four words of the message, as a reader remembers a phrase of it;
- `exchange`: two words of the message and two of the message before it, as a reader remembers
  what was said around it.

A query is found at rank r when the r-th hit lists the message among the messages that matched
(kenning.search.message_lines: what the reader is shown). Lexical ranking by default (no model is
needed); `--mode hybrid` embeds every window first (minutes: one message per window is thousands).

    python benchmarks/chat_units.py ../shared/data/books/dracula.md [--short] [--mode hybrid] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
from pathlib import Path

from kenning import Index
from kenning.ingest import ChunkOptions

SENDERS = ("Ana", "Ben", "Cy")
UNITS = {
    "window 8, stride 4": (8, 4),
    "window 6, stride 3": (6, 3),
    "window 4, stride 2": (4, 2),
    "one message": (1, 1),
}
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
_CLAUSE = re.compile(r"(?<=[.!?;:,])\s+")  # --short: chat-length messages, a clause each
_WORD = re.compile(r"[A-Za-z]{4,}")


def chat_from_book(text: str, short: bool = False) -> list[dict]:
    """The book as messages: a sentence each (a clause each when `short`), a paragraph a turn, a
    chapter a conversation."""
    messages, chapter, turn, clock = [], "opening", 0, 1_700_000_000
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        if paragraph.startswith("#"):
            chapter = paragraph.lstrip("# ").strip()[:60] or chapter
            continue
        sender = SENDERS[turn % len(SENDERS)]
        turn += 1
        for sentence in (_CLAUSE if short else _SENTENCE).split(paragraph):
            if len(_WORD.findall(sentence)) >= 3:
                clock += 60
                messages.append(
                    {
                        "id": f"m{len(messages)}",
                        "conversation": chapter,
                        "sender": sender,
                        "text": sentence,
                        "timestamp": clock,
                    }
                )
    return messages


def queries(messages: list[dict], n: int, rng: random.Random) -> dict[str, list[tuple[str, str]]]:
    """(query, id of the message sought) pairs of each kind."""
    out: dict[str, list[tuple[str, str]]] = {"phrase": [], "exchange": []}
    picks = rng.sample(range(1, len(messages)), min(n, len(messages) - 1))
    for i in picks:
        words = _WORD.findall(messages[i]["text"])
        start = rng.randrange(max(1, len(words) - 3))
        out["phrase"].append((" ".join(words[start : start + 4]), messages[i]["id"]))
        before = _WORD.findall(messages[i - 1]["text"])
        if messages[i - 1]["conversation"] == messages[i]["conversation"] and len(before) >= 2:
            pair = rng.sample(words, 2) + rng.sample(before, 2)
            out["exchange"].append((" ".join(pair), messages[i]["id"]))
    return out


def measure(index: Index, pairs: list[tuple[str, str]], mode: str) -> dict[str, float]:
    """Hit@1 and MRR@10 of the sought message being shown, marked, in a hit."""
    hits = mrr = 0.0
    for query, wanted in pairs:
        ranked = index.search(query, limit=10, mode=mode).hits
        shown = [
            r for r, h in enumerate(ranked, 1) if any(m["id"] == wanted and m["matched"] for m in h.messages)
        ]
        if shown:
            hits += shown[0] == 1
            mrr += 1 / shown[0]
    return {"hit_at_1": round(hits / len(pairs), 3), "mrr_at_10": round(mrr / len(pairs), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("book", type=Path)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--short", action="store_true", help="a clause per message (chat length)")
    parser.add_argument("--mode", choices=("lexical", "hybrid"), default="lexical")
    args = parser.parse_args()
    messages = chat_from_book(args.book.read_text(encoding="utf-8"), args.short)
    asked = queries(messages, args.queries, random.Random(args.seed))
    results = {}
    with tempfile.TemporaryDirectory() as work:
        log = Path(work) / "chat" / "log.jsonl"
        log.parent.mkdir()
        log.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
        for name, (size, stride) in UNITS.items():
            with Index(Path(work) / f"ix-{size}") as index:
                index.add([log.parent], options=ChunkOptions(message_window=size, message_stride=stride))
                if args.mode == "hybrid":
                    index.embed()
                results[name] = {kind: measure(index, pairs, args.mode) for kind, pairs in asked.items()}
    words = sum(len(m["text"].split()) for m in messages) / len(messages)
    said = {
        "book": args.book.name,
        "mode": args.mode,
        "messages": len(messages),
        "words_per_message": round(words, 1),
    }
    print(json.dumps({**said, "queries": {k: len(v) for k, v in asked.items()}}))
    print(f"{'unit':<20} {'phrase Hit@1':>13} {'MRR@10':>7} {'exchange Hit@1':>15} {'MRR@10':>7}")
    for name, kinds in results.items():
        p, e = kinds["phrase"], kinds["exchange"]
        phrase = f"{p['hit_at_1']:>13.3f} {p['mrr_at_10']:>7.3f}"
        print(f"{name:<20} {phrase} {e['hit_at_1']:>15.3f} {e['mrr_at_10']:>7.3f}")


if __name__ == "__main__":
    main()
