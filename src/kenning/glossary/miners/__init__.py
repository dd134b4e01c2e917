"""The miners: candidate synonyms found in the indexed text itself, for the glossary's pending queue.

An optional part of the glossary: only `kenning glossary suggest` (kenning.glossary.suggest) runs
them; search and indexing never import this package. Each miner reads a `Corpus` (the live chunks'
text and the counts they share) and returns `Suggestion`s: a canonical term, an alias, the kind of
evidence, a confidence score in 0..1, the counts behind it and a short example from the text with its
chunk id. A person reads them in `kenning glossary pending`, so the miners favour precision over
coverage.

Miners, by the name `mine` takes (the `kind` of what they propose):

- `acronym` (acronyms.py): a definition the text writes out, "JSON Web Token (JWT)".
- `names` (names.py, kinds `name-variant`, `name-title` and `title`): a person's full name and the
  part, the titled form or the bare title ("the Inspector") the text also calls them by.
- `morphology` (morphology.py): two spellings of one word, "e-mail" / "email", "colour" / "color".
- `distributional` (distributional.py): words used in the same contexts, never coordinated or
  written side by side.

Protected terms (see kenning.analysis.protected) are never given to the morphology and distributional
miners. The acronym and name miners read a relation the text states, so they may pair protected terms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kenning.analysis.analyzer import Analyzer
from kenning.glossary.miners.acronyms import mine_acronyms
from kenning.glossary.miners.corpus import Corpus, MinedShare, Passage, Suggestion, load_passages
from kenning.glossary.miners.distributional import mine_distributional
from kenning.glossary.miners.morphology import mine_morphology
from kenning.glossary.miners.names import mine_names

# Chunks mined at most: whole documents spread over the index are taken up to this many. Mining reads
# every word in Python (~0.8 ms a chunk); a 1M-chunk index took over 5 minutes and 9.7 GB before it
# was stopped. The pairs the miners look for recur, so a spread of documents finds the frequent ones.
MINE_CHUNKS = 50_000

MINERS: dict[str, Callable[[Corpus], list[Suggestion]]] = {
    "acronym": mine_acronyms,
    "names": mine_names,
    "morphology": mine_morphology,
    "distributional": mine_distributional,
}


def mine(
    store, analyzer: Analyzer, miners: Iterable[str] | None = None, collection: str | None = None
) -> tuple[list[Suggestion], Corpus]:
    """Run the miners (all by default) over the live index, or one collection of it; best first."""
    unknown = [m for m in miners or () if m not in MINERS]
    if unknown:
        raise ValueError(f"unknown miner(s) {', '.join(unknown)}: choose from {', '.join(MINERS)}")
    share: list[MinedShare] = []
    corpus = Corpus(load_passages(store, collection, MINE_CHUNKS, share), analyzer)
    corpus.share = share[0]
    out: list[Suggestion] = []
    for name in miners or MINERS:
        out.extend(MINERS[name](corpus))
    out.sort(key=lambda s: (-s.score, s.kind, s.canonical, s.alias))
    return out, corpus


__all__ = [
    "MINE_CHUNKS",
    "MINERS",
    "Corpus",
    "MinedShare",
    "Passage",
    "Suggestion",
    "load_passages",
    "mine",
    "mine_acronyms",
    "mine_distributional",
    "mine_morphology",
    "mine_names",
]
