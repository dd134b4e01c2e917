"""Chunk bodies compressed in blocks, as a search engine's document store keeps its stored fields.

The chunks a write adds for one file go in together, so their bodies are stored together: their
UTF-8 bytes run one after another in blocks of up to BLOCK_BYTES, each block compressed once with
zstd. What neighbouring chunks share is then stored about once (the messages two overlapping chat
windows both hold, a document's recurring names and phrases), and a short body, which compresses
poorly alone, compresses as well as a long one. A chunk's row keeps its block's id and its body's
byte range there; a body too long to share a block with another stays in its own row
(kenning.store.compact.pack_text).

Reading a chunk decompresses its block (BLOCK_BYTES at most, a few tens of microseconds). Blocks
never change once written and their ids are not reused, so a reader keeps the blocks it read last
(BlockCache) and a query's hits from one file cost one block between them. A block goes when the
last chunk in it goes (the stores' delete paths); it records the range of chunk ids it was written
for, so that check reads only those rows.

BLOCK_BYTES: on the chat tier of benchmarks/scale.py, blocks of 16 KB store the windows' text in
two fifths of the space their rows took, within a tenth of what 32 KB blocks give, and keep a
hit's read small.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kenning.store.compact import DamagedText
from kenning.store.zstd_codec import decompress_bounded, zstandard_module, zstd

BLOCK_BYTES = 16 << 10  # the most text (UTF-8 bytes) one block holds
CACHED_BLOCKS = 64  # decompressed blocks a store keeps (at most 1 MB)


@dataclass(frozen=True)
class Block:
    """Bodies stored as one compressed block: `members` are their positions in the list given to
    `plan_blocks`, `spans` each one's byte range in the decompressed block."""

    members: list[int]
    data: bytes
    spans: list[tuple[int, int]]


def encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def plan_blocks(bodies: Sequence[str]) -> tuple[list[Block], list[int]]:
    """The blocks the bodies are stored in, consecutive bodies together up to BLOCK_BYTES, and the
    positions of the bodies left to their own rows (one too long to share a block, or one alone)."""
    raws = [encoded(b) for b in bodies]
    groups: list[list[int]] = [[]]
    held = 0
    for i, raw in enumerate(raws):
        if groups[-1] and held + len(raw) > BLOCK_BYTES:
            groups.append([])
            held = 0
        groups[-1].append(i)
        held += len(raw)
    blocks, alone = [], []
    for group in groups:
        if len(group) < 2:
            alone.extend(group)
            continue
        spans, at = [], 0
        for i in group:
            spans.append((at, at + len(raws[i])))
            at += len(raws[i])
        blocks.append(Block(group, zstd()[0].compress(b"".join(raws[i] for i in group)), spans))
    return blocks, alone


def decompress_block(data: bytes) -> bytes:
    """A block's text (UTF-8 bytes); DamagedText for anything kenning did not write."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DamagedText(f"a stored block is a {type(data).__name__}")
    try:
        return decompress_bounded(bytes(data), BLOCK_BYTES)
    except zstandard_module().ZstdError as exc:
        raise DamagedText(f"a stored block does not decompress: {exc}") from exc


def body_in_block(raw: bytes, start, end) -> str:
    """A body's text from its block's decompressed bytes; DamagedText for a range outside it."""
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(raw)):
        raise DamagedText(f"a body's range {start!r}..{end!r} lies outside its block of {len(raw)} bytes")
    return raw[start:end].decode("utf-8", "surrogatepass")


class BlockCache:
    """The decompressed blocks a store read last (CACHED_BLOCKS of them), by block id."""

    def __init__(self) -> None:
        self._blocks: OrderedDict[int, bytes] = OrderedDict()

    def get(self, block_id: int, load: Callable[[list[int]], dict[int, bytes]]) -> bytes:
        """The block's text; `load` reads stored blocks by id (compressed), for one not held."""
        raw = self._blocks.get(block_id)
        if raw is None:
            raw = self.fetch([block_id], load).get(block_id)
            if raw is None:
                raise DamagedText(f"block {block_id} is missing")
        else:
            self._blocks.move_to_end(block_id)
        return raw

    def fetch(self, block_ids, load: Callable[[list[int]], dict[int, bytes]]) -> dict[int, bytes]:
        """The blocks `block_ids` name (those stored), the ones not held read in one `load`: a
        batch of rows reads its bodies from what this returns, however many blocks it needs."""
        wanted = {b for b in block_ids if isinstance(b, int)}
        batch = {b: self._blocks[b] for b in wanted if b in self._blocks}
        missing = sorted(wanted - batch.keys())
        if missing:
            for block_id, data in load(missing).items():
                batch[block_id] = self._blocks[block_id] = decompress_block(data)
            while len(self._blocks) > CACHED_BLOCKS:
                self._blocks.popitem(last=False)
        return batch

    def clear(self) -> None:
        self._blocks.clear()
