"""`kenning watch PATH...` and `kenning serve --watch`: re-index when files change.

watchfiles reports changes in batches; a batch waits until the files have been quiet for DEBOUNCE_MS,
so saving ten files, or one file ten times, is one re-index. Re-indexing is the ordinary incremental
`kenning index` of the watched paths (only what changed is read again), followed by embedding the
new chunks when the index has vectors. Changes inside the index folder itself are ignored.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from kenning.store import is_server_url

DEBOUNCE_MS = 800
LOG = logging.getLogger("kenning")


class Watcher:
    """Watches paths and re-indexes them into a Service's index (or a plain Index and lock)."""

    def __init__(self, service, paths: list[str], debounce_ms: int = DEBOUNCE_MS, on_update=None):
        self.service = service
        self.paths = [str(Path(p).expanduser().absolute()) for p in paths]
        self.debounce_ms = debounce_ms
        self.on_update = on_update or (lambda report, embedded: None)
        self.stop_event = threading.Event()
        # the index's own folder is never re-indexed (a server store has none)
        self.index_dir = None if is_server_url(service.index_dir) else str(Path(service.index_dir).absolute())
        missing = [p for p in self.paths if not Path(p).exists()]
        if missing:
            raise ValueError(f"cannot watch {', '.join(missing)}: no such file or folder")

    def update(self):
        """One incremental re-index of the watched paths (and the vectors it needs)."""
        index = self.service.index
        with self.service.lock:
            report = index.add(self.paths)
            embedded = None
            if index.embedding_model() and report.chunks_added:
                try:
                    embedded = index.embed()
                except Exception as exc:  # the model may be unreachable: the words are indexed anyway
                    LOG.warning("re-indexed, but the new chunks were not embedded: %s", exc)
        self.on_update(report, embedded)
        return report, embedded

    def run(self) -> None:
        from watchfiles import watch

        def relevant(change, path: str) -> bool:
            return self.index_dir is None or not path.startswith(self.index_dir)

        for _changes in watch(
            *self.paths,
            watch_filter=relevant,
            debounce=self.debounce_ms,
            stop_event=self.stop_event,
            raise_interrupt=True,  # Ctrl-C ends `kenning watch` with 130, as any interrupted command
        ):
            try:
                self.update()
            except Exception as exc:  # one bad batch (a file mid-write) must not end the watch
                LOG.warning("re-indexing after a change failed: %s", exc)

    def stop(self) -> None:
        self.stop_event.set()
