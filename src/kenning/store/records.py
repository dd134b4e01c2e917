"""The typed records that cross the store boundary: what a store hands out and takes in."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
from pyroaring import BitMap

from kenning.store.field_lengths import unpack_lengths, unpack_lengths_into

# The meta key recording which saved vector graph (kenning.sidefiles.ann) matches the committed vectors.
# Every write that changes the live set or the vectors drops it in the same transaction, so a reader
# never trusts a graph a later commit made stale; the writer sets it again once the graph is saved.
VECTOR_GRAPH_META = "vector_graph"
# The chunks with a committed vector that the saved graph lacks, while an embed run commits between two
# saves of the graph (kenning.signals.dense reads them instead of listing every chunk's vector, ~2.4 s
# at 1M chunks, on each generation). Dropped with VECTOR_GRAPH_META: only an embed commit writes it.
VECTOR_GRAPH_LACKS_META = "vector_graph_lacks"


class MissingText(NamedTuple):
    """A text no vector of an embedder holds yet: its hash, the text embedded, the chunks holding it."""

    text_hash: str
    text: str
    chunk_ids: tuple[int, ...]


def embedding_text(title: str, body: str, own: str | None = None) -> str:
    """What an embedder sees for a chunk: its heading path, then its own text (`own_text`; `own`
    when the caller has it already)."""
    if not title:
        return body
    return f"{title}\n{own_text(title, body) if own is None else own}"


def own_text(title: str, body: str) -> str:
    """A chunk's text without the heading lines its title already says: what is analysed as the
    body field, embedded, quoted and shown as a snippet. A Markdown section's stored text starts
    with its own headings (so its lines are the file's lines); the title field holds them once, for
    every window of the section alike."""
    return body[own_text_start(title, body) :]


_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_SETEXT_RULE = re.compile(r" {0,3}(?:=+|-+)[ \t]*")


def own_text_start(title: str, body: str) -> int:
    """Where `body`'s own text starts: after its leading heading lines that name parts of `title`
    (and the blank lines between them); 0 when it starts with none or holds nothing else, so a
    chunk stored without its heading reads exactly as before. Reads only the lines it passes."""
    if not title:
        return 0
    parts: set[str] | None = None
    pos = after = 0
    while pos < len(body):
        end = _line_end(body, pos)
        line = body[pos:end]
        if not line.strip():
            pos = end + 1
            continue
        parts = parts if parts is not None else {_letters(part) for part in title.split(" > ")}
        atx = _ATX.fullmatch(line)
        if atx and _letters(atx.group(2) or "") in parts:
            pos = after = end + 1
            continue
        rule_end = _line_end(body, end + 1) if end < len(body) else end
        if (
            not atx
            and rule_end > end
            and _SETEXT_RULE.fullmatch(body[end + 1 : rule_end])
            and _letters(line) in parts
        ):
            pos = after = rule_end + 1
            continue
        break
    return after if after and _TEXT.search(body, after) else 0


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


_TEXT = re.compile(r"\S")


def _letters(text: str) -> str:
    """Letters and digits only, casefolded: a heading line and its cleaned title compare equal."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


# the substring index (Substrings protocol) finds words of this many characters or more (trigrams)
MIN_TRIGRAM_WORD = 3

# what a scope filter asks of a chunk's front matter: (key, value) pairs, each to be present
FrontMatterPairs = Sequence[tuple[str, str]]

# Metadata filters (`--meta KEY=VALUE`) read a message window's own metadata too, under these keys:
# `sender=Bob` (or `participant`, `senders`) is a window where Bob wrote, `conversation=family` a
# window of that conversation. Front matter of the same key matches as well.
MESSAGE_FACETS = {
    "sender": "senders",
    "senders": "senders",
    "participant": "senders",
    "conversation": "conversation",
}


def substring_text(title: str, body: str) -> str:
    """What the substring signal searches in a chunk: title and body, casefolded (Python's folding:
    ß -> ss), the same for the in-memory view and any store's substring index."""
    return f"{title}\n{body}".casefold()


def range_bounds(sizes, budget: int) -> list[str]:
    """Terms that cut (term, merge memory) pairs, terms ascending (a term may repeat, once per
    segment), into ranges of about `budget` each: a range starts at a bound and ends before the next.
    Every merge cuts its term ranges this way (the stores' term_bounds, kenning.indexing.spill)."""
    bounds: list[str] = []
    held = 0
    for term, size in sizes:
        if held and held + size > budget and (not bounds or bounds[-1] != term):
            bounds.append(term)
            held = 0
        held += int(size)
    return bounds


def meta_json(meta: dict, sort_keys: bool = False) -> str:
    """A chunk's metadata as hashed; most chunks have none, and "{}" costs nothing."""
    return json.dumps(meta, sort_keys=sort_keys, default=str) if meta else "{}"


def stored_meta_json(meta: dict) -> str:
    """A chunk's metadata as a store keeps it: compact JSON, and a chat window's `message_ids` left
    out where they are its lines' ids in order (`messages`), as they are unless a line stands for a
    run of repeats; `read_meta` puts them back. They were a sixth of a chat index's chunk rows."""
    if not meta:
        return "{}"
    if "message_ids" in meta and meta["message_ids"] == _line_ids(meta.get("messages")):
        meta = {k: v for k, v in meta.items() if k != "message_ids"}
    return json.dumps(meta, default=str, separators=(",", ":"))


def read_meta(meta: dict) -> dict:
    """Stored metadata as it was written (`stored_meta_json`): a chat window's `message_ids` back."""
    if "message_ids" not in meta:
        ids = _line_ids(meta.get("messages"))
        if ids is not None:  # where a window's metadata has them: after its conversation
            head = {"conversation": meta["conversation"]} if "conversation" in meta else {}
            return {**head, "message_ids": ids, **meta}
    return meta


def _line_ids(rows) -> list | None:
    """The ids of a chat window's lines, from its `messages` ([id, sender index, time] each); None
    when they are not all there."""
    if not isinstance(rows, list) or not rows:
        return None
    ids = [row[0] for row in rows if isinstance(row, list) and row and isinstance(row[0], str)]
    return ids if len(ids) == len(rows) else None


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass
class SourceRow:
    """One indexed file: what incremental indexing compares against."""

    id: int
    path: str
    collection: str
    kind: str
    size: int
    mtime_ns: int
    content_hash: str
    indexed_at: float
    n_chunks: int


@dataclass
class ChunkRow:
    """A whole chunk: text, provenance and metadata."""

    id: int
    source_id: int
    ordinal: int
    doc_key: str
    title: str
    body: str
    start_line: int | None
    end_line: int | None
    page: int | None
    time: float | None
    meta: dict
    content_hash: str
    path: str = ""


class ChunkHead(NamedTuple):
    """What a ranked list shows of a chunk without reading its body or metadata."""

    doc_key: str
    title: str
    path: str
    start_line: int | None
    end_line: int | None
    page: int | None
    time: float | None


class ChunkGroup(NamedTuple):
    """A message-log chunk's conversation and message ids (for overlap dedup)."""

    conversation: str | None
    message_ids: list | None


class SourceFacets(NamedTuple):
    """The source fields that scope filters read."""

    id: int
    path: str
    collection: str
    kind: str


@dataclass
class SegmentData:
    """An immutable segment's per-document lengths, aligned with its sorted doc ids.

    Ids that run without a gap are kept as their first (`stored_ids` None) and made into an array
    only when asked for: a view places such a segment by its ends (`place`), and at 1M chunks the
    array took a new process ~1.5 ms to make. The lengths stay as stored (`packed_lengths`, usually
    compressed) until asked for, and a view decodes them straight into its own arrays
    (`lengths_into`): in a new process at 1M chunks that took 2.9 against 4.6 ms decoded to new
    arrays and copied."""

    id: int
    n_docs: int
    packed_lengths: tuple[bytes, bytes]  # title, body: kenning.store.field_lengths.pack_lengths
    stored_ids: np.ndarray | None = None  # every id, when they do not run from first_id without a gap
    first_id: int = 0

    @cached_property
    def title_lens(self) -> np.ndarray:
        return self._lengths(0)

    @cached_property
    def body_lens(self) -> np.ndarray:
        return self._lengths(1)

    def _lengths(self, field: int) -> np.ndarray:
        return unpack_lengths(self.packed_lengths[field], self.n_docs)

    def lengths_into(self, title: np.ndarray, body: np.ndarray) -> None:
        """Write the title and body lengths into the given uint16 arrays (of `n_docs` each)."""
        for field, out in enumerate((title, body)):
            unpack_lengths_into(self.packed_lengths[field], self.n_docs, out)

    @cached_property
    def doc_ids(self) -> np.ndarray:
        if self.stored_ids is not None:
            return self.stored_ids
        return np.arange(self.first_id, self.first_id + self.n_docs, dtype=np.uint32)

    @property
    def place(self) -> slice | np.ndarray:
        """Where the segment's chunks sit in an array by chunk id: a slice when its ids run without
        a gap, else the ids themselves."""
        ids = self.stored_ids
        if ids is None:
            return slice(self.first_id, self.first_id + self.n_docs)
        if len(ids) and int(ids[-1]) - int(ids[0]) + 1 == len(ids):
            return slice(int(ids[0]), int(ids[-1]) + 1)
        return ids


class RawPostings(NamedTuple):
    """One term's postings in one segment: chunk ids ascending, per-field term frequencies."""

    ids: np.ndarray
    tf_title: np.ndarray
    tf_body: np.ndarray


class SegmentPostings(NamedTuple):
    """One term's whole posting row in a segment, positions included (tf positions per posting)."""

    term: str
    ids: np.ndarray
    tf_title: np.ndarray
    tf_body: np.ndarray
    pos_title: np.ndarray
    pos_body: np.ndarray


# what one posting row costs in memory beyond its stored bytes while a merge holds it (its tuple and
# bytes objects, read or encoded: ~250-280 bytes measured): merge ranges count it, so a range of many
# short rows (rare words) holds no more memory than one of a few long rows; counting bytes alone let a
# range of rare words hold ~270k rows, ten times its budget in objects
ROW_MEMORY_BYTES = 300


@dataclass
class SegmentColumns:
    """A new segment's postings as flat columns, term after term (terms ascending): term i's postings
    are ids[posting_bounds[i]:posting_bounds[i + 1]] (and its tf_title, tf_body), its title and body
    positions pos_title[title_bounds[i]:title_bounds[i + 1]] and the same in pos_body. Encoding a
    segment from these at once costs a few array operations, not a few per term."""

    terms: list[str]
    ids: np.ndarray
    tf_title: np.ndarray
    tf_body: np.ndarray
    pos_title: np.ndarray
    pos_body: np.ndarray
    posting_bounds: np.ndarray
    title_bounds: np.ndarray
    body_bounds: np.ndarray

    def rows(self):
        """(term, ids, tf_title, tf_body, pos_title, pos_body) per term, as SegmentPostings holds them."""
        p, t, b = (bounds.tolist() for bounds in (self.posting_bounds, self.title_bounds, self.body_bounds))
        for i, term in enumerate(self.terms):
            yield (
                term,
                self.ids[p[i] : p[i + 1]],
                self.tf_title[p[i] : p[i + 1]],
                self.tf_body[p[i] : p[i + 1]],
                self.pos_title[t[i] : t[i + 1]],
                self.pos_body[b[i] : b[i + 1]],
            )


@dataclass
class EntityPosting:
    """One entity: its folded key, a surface form as written, its kind, and the chunks that hold it."""

    key: str
    surface: str
    kind: str
    docs: BitMap


@dataclass
class Snapshot:
    """What one committed generation of the index looks like to a reader."""

    generation: int
    live: BitMap
    segment_ids: tuple[int, ...]
    analyzer: dict
    last_commit: float | None


@dataclass
class GlossaryGroupRow:
    id: int
    scope: str
    origin: str


@dataclass
class GlossaryTermRow:
    id: int
    group_id: int
    surface: str
    key: str
    status: str
    protected: str | None
    origin: str
    evidence: str | None
