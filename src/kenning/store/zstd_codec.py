"""The zstd compressor and decompressor a thread reuses (a new context per value costs more than the
value), loaded on first use: a search that decompresses nothing never imports zstandard."""

from __future__ import annotations

import threading

TEXT_LEVEL = 1
_codecs = threading.local()


def zstandard_module():
    """The zstd module, loaded on first use: a search that decompresses nothing (a lexical query
    showing titles) never needs it, ~1 ms of a new process's first query."""
    import zstandard

    return zstandard


def zstd() -> tuple:
    """This thread's zstd compressor and decompressor (a context serves one thread at a time)."""
    pair = getattr(_codecs, "pair", None)
    if pair is None:
        zstandard = zstandard_module()
        pair = _codecs.pair = (
            zstandard.ZstdCompressor(level=TEXT_LEVEL, write_checksum=True),
            zstandard.ZstdDecompressor(),
        )
    return pair


def decompress_bounded(data: bytes, most: int) -> bytes:
    """A zstd frame's content, refused (zstandard's ZstdError) when it holds or says it holds more
    than `most` bytes: the decompressor honours its output limit only for frames that do not state
    their size, and allocates what a frame's header states, so a small crafted frame could claim
    gigabytes."""
    zstandard = zstandard_module()
    claimed = zstandard.frame_content_size(data)
    if claimed > most:
        raise zstandard.ZstdError(f"the frame says it holds {claimed} bytes, more than {most}")
    return zstd()[1].decompress(data, max_output_size=most)
