"""Prepared model files: an ONNX graph as a session runs it (kenning's rewrite and onnxruntime's own
graph optimisations applied), kept in the user's cache folder so a new process loads it as it is.

Preparing the default model costs about 0.4 s of every process's first embedding, so of each
`kenning search` in hybrid mode and of a server's first query: reading and hashing the 23 MB file,
the graph rewrite (_onnx_graph.py), then onnxruntime optimising the graph as the session starts. A
prepared file starts a session in about 0.1 s and gives the same vectors bit for bit
(tests/models/test_embed_minilm.py). onnxruntime's "extended" optimisations are the ones kept: unlike its
layout ones they do not depend on the CPU. A file's name says all it was made from: the source file
(path, size, modification time), the rewrite's code, the rewrite asked for, and onnxruntime's
version. One that will not load is removed and made again.

The folder is $KENNING_MODEL_CACHE, else `$XDG_CACHE_HOME/kenning/models` (`~/.cache/...`);
KENNING_MODEL_CACHE=off keeps nothing. A folder that cannot be written keeps nothing either.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from kenning.places.cachedir import user_cache

MODEL_CACHE_ENV = "KENNING_MODEL_CACHE"
_REWRITE_CODE = Path(__file__).with_name("_onnx_graph.py")


def cache_folder() -> Path | None:
    """Where prepared models are kept (None: nowhere)."""
    chosen = os.environ.get(MODEL_CACHE_ENV, "").strip()
    if chosen.lower() == "off":
        return None
    return Path(chosen).expanduser() if chosen else user_cache("models")


class PreparedModel:
    """The prepared file of one source model file and rewrite, and the rewrite's report beside it."""

    def __init__(self, folder: Path, source: Path, rewrite: str):
        import onnxruntime

        st = source.stat()
        made_from = [
            str(source.resolve()),
            str(st.st_size),
            str(st.st_mtime_ns),
            hashlib.sha256(_REWRITE_CODE.read_bytes()).hexdigest(),
            rewrite,
            onnxruntime.__version__,
        ]
        key = hashlib.sha256("\0".join(made_from).encode()).hexdigest()[:24]
        self.model = folder / f"{source.stem}-{key}.onnx"
        self.report = self.model.with_suffix(".json")
        self.making = self.model.with_suffix(f".onnx.{os.getpid()}.tmp")

    @classmethod
    def of(cls, source: Path, rewrite: str) -> PreparedModel | None:
        folder = cache_folder()
        if folder is None:
            return None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            return cls(folder, source, rewrite)
        except OSError:
            return None

    def load(self) -> tuple[str, dict] | None:
        """(the prepared file, the rewrite's report) when both are there."""
        try:
            return str(self.model), json.loads(self.report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def keep(self, report: dict) -> None:
        """The session just started wrote `making`: it becomes the prepared file (atomically)."""
        try:
            os.replace(self.making, self.model)
            tmp = self.report.with_suffix(f".json.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(report), encoding="utf-8")
            os.replace(tmp, self.report)
        except OSError:
            self.discard()

    def discard(self) -> None:
        """Remove what will not load, or what a failed preparation left."""
        for path in (self.report, self.model, self.making):
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
