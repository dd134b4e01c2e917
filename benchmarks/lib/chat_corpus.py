"""The chat-sized tier of benchmarks/scale.py: message logs as people keep them, and short queries.

Messages are 3 to 40 words, their words drawn from the same frequency list as the passage tiers
(scale.vocabulary). They are written as kenning's message-log JSON lines (`id`, `conversation`,
`sender`, `timestamp`, `text`), SHARD messages to a file, a conversation running over five files (a
chat exported month by month), each conversation with two to eight of a few thousand senders, its
messages a few seconds to a few hours apart. Queries are one to three words of one message, at least
one of them among its rarest (people search a chat for the word they remember), and a quarter of
them carry a date range of 30 days around that message (`{"q", "since", "before"}`), so the filtered
latency is measured too.
"""

from __future__ import annotations

import json
import math
import shutil
from collections import Counter
from pathlib import Path

import numpy as np

SHARD = 100  # messages per file, as the passage tiers' documents per file
FILES_PER_CONVERSATION = 5
SENDERS = 3000
START = 1_704_067_200  # 2024-01-01 00:00 UTC
DAY = 86_400
FILTERED_SHARE = 0.25


def write_chat_corpus(directory: Path, n: int, words: list[str], probs: np.ndarray, seed: int) -> None:
    """n messages in shards of SHARD, written once (a marker file says the corpus is complete)."""
    done = directory / "complete.json"
    recipe = {"messages": n, "seed": seed, "shard": SHARD, "shape": "chat"}
    if done.exists() and {k: json.loads(done.read_text()).get(k) for k in recipe} == recipe:
        return
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "corpus").mkdir(parents=True)
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(probs)
    senders = [f"{first} {last}" for first, last in _names(rng, SENDERS)]
    lengths = rng.integers(3, 41, size=n)
    # a few seconds to a few hours between two messages (log-uniform), so a conversation spans weeks
    gaps = np.exp(rng.uniform(math.log(5), math.log(4 * 3600), size=n)).astype(np.int64)
    time = START
    for shard in range(0, n, SHARD):
        conversation = shard // (SHARD * FILES_PER_CONVERSATION)
        crng = np.random.default_rng(seed + 7 * conversation)
        people = [senders[i] for i in crng.choice(SENDERS, size=int(crng.integers(2, 9)), replace=False)]
        if shard % (SHARD * FILES_PER_CONVERSATION) == 0:
            time = START + int(crng.integers(0, 700 * DAY))  # conversations overlap in time
        stop = min(n, shard + SHARD)
        drawn = np.searchsorted(cumulative, rng.random(int(lengths[shard:stop].sum())) * cumulative[-1])
        drawn = np.minimum(drawn, len(words) - 1)
        lines, at = [], 0
        for i in range(shard, stop):
            time += int(gaps[i])
            text = " ".join(words[w] for w in drawn[at : at + int(lengths[i])])
            at += int(lengths[i])
            message = {
                "id": f"m{i}",
                "conversation": f"chat {conversation}",
                "sender": people[int(rng.integers(len(people)))],
                "timestamp": time,
                "text": text,
            }
            lines.append(json.dumps(message))
        path = directory / "corpus" / f"part-{shard // SHARD:05d}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done.write_text(json.dumps(recipe | {"vocabulary": len(words)}))


def make_chat_queries(directory: Path, count: int, seed: int) -> list:
    """`count` queries: strings, and a FILTERED_SHARE of {"q", "since", "before"} (epoch seconds)."""
    rng = np.random.default_rng(seed + 1)
    shards = sorted((directory / "corpus").glob("part-*.jsonl"))
    df: Counter = Counter()
    sample: list[tuple[list[str], int]] = []
    for shard in rng.choice(len(shards), size=min(len(shards), 40), replace=False):
        for line in shards[shard].read_text(encoding="utf-8").splitlines():
            message = json.loads(line)
            words = message["text"].split()
            df.update(set(words))
            sample.append((words, int(message["timestamp"])))
    queries: list = []
    while len(queries) < count:
        words, time = sample[int(rng.integers(len(sample)))]
        if len(set(words)) < 3:
            continue
        k = int(rng.integers(1, 4))
        rare = sorted(set(words), key=lambda w: (df[w], w))[:3]
        picked = [rare[int(rng.integers(len(rare)))]]
        picked += [words[int(i)] for i in rng.integers(len(words), size=k - 1)]
        text = " ".join(dict.fromkeys(picked))
        if rng.random() < FILTERED_SHARE:
            since = time - int(rng.integers(0, 30 * DAY))
            queries.append({"q": text, "since": since, "before": since + 30 * DAY})
        else:
            queries.append(text)
    return queries


def _names(rng, count: int) -> list[tuple[str, str]]:
    """`count` distinct (first, last) names from syllables: senders as a chat export names them."""
    syllables = "an bo ca de el fi ga ha io ju ka li mo na ri sa".split()
    out: set[tuple[str, str]] = set()
    while len(out) < count:
        first = "".join(syllables[int(i)] for i in rng.integers(len(syllables), size=2)).title()
        last = "".join(syllables[int(i)] for i in rng.integers(len(syllables), size=3)).title()
        out.add((first, last))
    return sorted(out)
