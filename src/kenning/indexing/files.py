"""Which files an add indexes, and what each one changes: the file-by-file half of the write run.

Indexing is incremental by content: a file whose size and mtime are unchanged is skipped without
being read; a file whose bytes hash the same is skipped after reading; otherwise it is parsed into
chunks (kenning.ingest), screened for credentials (kenning.ingest.secrets), and its chunks compared
by content hash with those the index holds, so unchanged chunks keep their ids and only new ones go
to the run (kenning.indexing.chunk_run) to be analysed. Files that vanished from an indexed folder are
removed; what lies under a folder that could not be read stays. A file skipped on purpose (a secret,
a file past a limit) is taken out if an earlier run put it there: what a run leaves out is not in
the index after it.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kenning.common.unicode import well_formed, well_formed_data
from kenning.indexing.chunk_run import ChunkRun
from kenning.indexing.reports import IndexReport, ProgressCallback, display_path
from kenning.ingest import ChunkOptions, IngestError, binary_reason, discover, parse_file
from kenning.ingest.limits import FileSkipped, read_bounded
from kenning.ingest.secrets import screen_chunks
from kenning.ingest.walk import path_key
from kenning.store.errors import decoding

SECRET_SOURCES_META = "secret_sources"  # files indexed with --include-secrets that hold credentials
# files whose sources one query looks up: a re-index of 10,000 files made 10,000 queries (and a
# PostgreSQL store as many round trips) to learn that 9,900 had not changed
SOURCE_LOOKUP = 1_000


@dataclass
class FileRules:
    """What one run may read and keep: the size bound, whether credentials are kept, and the files
    an earlier --include-secrets run indexed with credentials in them (a later run without the flag
    reads these again, unchanged or not, so that it takes them out)."""

    max_file_bytes: int
    include_secrets: bool
    secret_sources: set[str]
    recorded: frozenset[str] = frozenset()  # secret_sources as the index holds them

    @classmethod
    def read(cls, store, max_file_bytes: int, include_secrets: bool) -> FileRules:
        """The rules of a run, with the files with credentials the index records."""
        with decoding("the record of files with credentials"):
            held = frozenset(json.loads(store.get_meta(SECRET_SOURCES_META) or "[]"))
        return cls(max_file_bytes, include_secrets, set(held), held)

    def save(self, store) -> None:
        """Record the files with credentials as the run leaves them, when it changed them."""
        if self.secret_sources != self.recorded:
            store.set_meta(SECRET_SOURCES_META, json.dumps(sorted(self.secret_sources)))


class FileIndexer:
    """Brings one run's files into the index (the module docstring). `index` goes through the files
    found; `remove_vanished` then takes out what is gone from the folders that were read."""

    def __init__(self, run: ChunkRun, rules: FileRules, options: ChunkOptions, force: bool):
        self.run = run
        self.store = run.store
        self.report = run.report
        self.rules = rules
        self.options = options
        self.force = force
        self.seen: set[str] = set()  # files found (skipped on purpose or not): not gone
        self.unread: list[str] = []  # folders (or files) that failed: what they held before stays

    def index(self, jobs: list[tuple], paths: Sequence, progress: ProgressCallback | None) -> None:
        """Index each (found file, collection) of `jobs`; `paths`: the run's paths as given (one
        that fails is reported missing)."""
        report = self.report
        given = {str(Path(p).expanduser().absolute()) for p in paths}
        keys = [path_key(found.path) for found, _ in jobs]
        known: dict = {}  # the sources of the next SOURCE_LOOKUP files, looked up together
        for n, ((found, collection), key) in enumerate(zip(jobs, keys, strict=True), 1):
            if (n - 1) % SOURCE_LOOKUP == 0:
                known = self.store.sources_by_paths(keys[n - 1 : n - 1 + SOURCE_LOOKUP])
            if progress:
                progress(display_path(found.path), n, len(jobs))
            if found.error:
                report.errors.append((display_path(found.path), found.error))
                self.unread.append(key)
                if str(found.path) in given:
                    report.missing.append(display_path(found.path))
                continue
            self.seen.add(key)  # skipped on purpose is not gone either
            if found.skip:
                report.skipped.append((display_path(found.path), found.skip))
                self.run.forget(known.get(key))
                self.rules.secret_sources.discard(key)
                continue
            report.files_seen += 1
            self.index_file(found.path, key, known.get(key), collection)

    def index_file(self, path: Path, key: str, source, collection: str) -> None:
        """One file: `key` the path as the index writes it (path_key), `source` what the index holds
        of it (None: nothing)."""
        report, rules = self.report, self.rules
        try:
            stat = path.stat()
        except OSError as exc:
            report.errors.append((display_path(path), f"cannot stat: {exc.strerror or exc}"))
            return
        recheck = not rules.include_secrets and key in rules.secret_sources  # indexed with its secrets
        same = source and source.size == stat.st_size and source.mtime_ns == stat.st_mtime_ns
        if same and not self.force and not recheck:
            if source.collection != collection:
                self.store.touch_source(source.id, stat.st_size, stat.st_mtime_ns, collection)
            report.files_unchanged += 1
            return
        shown = display_path(path)  # (an unchanged file, most files of a re-index, needs no name shown)
        try:
            data = read_bounded(
                path, rules.max_file_bytes, shown, binary_head=lambda head: binary_reason(path, head)
            )
        except FileSkipped as exc:
            report.skipped.append((shown, str(exc).removeprefix(f"{shown}: ")))
            self.run.forget(source)
            return
        except IngestError as exc:
            report.errors.append((shown, str(exc).removeprefix(f"{shown}: ")))
            return
        file_hash = hashlib.sha256(data).hexdigest()
        if source and not self.force and not recheck and source.content_hash == file_hash:
            # same bytes, new time: chunks that took their time from the file take the new one
            self.store.retime_chunks(source.id, source.mtime_ns / 1e9, stat.st_mtime)
            self.store.touch_source(source.id, stat.st_size, stat.st_mtime_ns, collection)
            report.files_unchanged += 1
            return
        parsed = self._parse(path, shown, data, key, source)
        if parsed is None or not self._screen(parsed, shown, key, source):
            return
        report.files_indexed += 1
        source_id = self.store.upsert_source(
            key, parsed.kind, stat.st_size, stat.st_mtime_ns, file_hash, collection
        )
        self._store_chunks(source_id, parsed.chunks, stat.st_mtime)

    def _parse(self, path: Path, shown: str, data: bytes, key: str, source):
        """The file parsed into chunks, or None (skipped or an error, in the report)."""
        report = self.report
        limit = self.rules.max_file_bytes  # also for the files one is read with (users.json, chat.db-wal)
        try:
            parsed = parse_file(path, self.options, shown, data, key, max_bytes=limit)
        except FileSkipped as exc:  # past a bound of kenning.ingest.limits
            report.skipped.append((shown, str(exc).removeprefix(f"{shown}: ")))
            self.run.forget(source)
            return None
        except IngestError as exc:
            report.errors.append((shown, str(exc)))
            return None
        except RecursionError:
            report.errors.append((shown, "cannot parse: nested too deeply"))
            return None
        except Exception as exc:  # a parser bug must not lose the whole run
            report.errors.append((shown, f"cannot parse: {type(exc).__name__}: {exc}"))
            return None
        report.warnings.extend(parsed.warnings)
        for chunk in parsed.chunks:  # a "\ud800" escape in JSON or YAML decodes to a lone surrogate
            _make_well_formed(chunk)
        return parsed

    def _screen(self, parsed, shown: str, key: str, source) -> bool:
        """Screen a parsed file for credentials (redacting tokens unless --include-secrets): False
        when it is skipped for holding them."""
        rules, report = self.rules, self.report
        credential, redacted = screen_chunks(parsed.chunks, redact_tokens=not rules.include_secrets)
        if rules.include_secrets and (credential or redacted):
            rules.secret_sources.add(key)  # kept as asked; a run without the flag takes them out
            return True
        rules.secret_sources.discard(key)
        if credential:
            why = f"holds credentials ({credential}) (--include-secrets to index it)"
            report.skipped.append((shown, why))
            self.run.forget(source)
            return False
        if redacted:
            kinds = ", ".join(sorted(set(redacted)))
            report.warnings.append(
                f"{shown}: {len(redacted)} secret(s) redacted ({kinds}); --include-secrets keeps them"
            )
        return True

    def _store_chunks(self, source_id: int, chunks: list, mtime: float) -> None:
        """A file's chunks in the index: each one the index holds already (by content hash) moved
        to its new place, the others added; the file's chunks not among them removed."""
        reusable: dict[str, list[int]] = {}
        for chunk_id, content_hash in self.store.chunk_hashes(source_id):
            reusable.setdefault(content_hash, []).append(chunk_id)
        new = []
        for ordinal, chunk in enumerate(chunks):
            content_hash = chunk.content_hash()
            if chunk.time is None:
                chunk.time = mtime
            pool = reusable.get(content_hash)
            if pool:
                self.store.move_chunk(pool.pop(0), ordinal, chunk)
                self.report.chunks_kept += 1
                continue
            new.append((ordinal, chunk, content_hash))
        self.run.add_chunks(source_id, new)
        stale = [chunk_id for ids in reusable.values() for chunk_id in ids]
        if stale:
            self.run.remove_chunks(stale)
        self.store.set_source_chunk_count(source_id, len(chunks))

    def remove_vanished(self, roots: Sequence) -> None:
        """Drop indexed files that no longer exist (or no longer match) under the given roots; what
        lies under a root or folder that could not be read is kept."""
        kept_prefixes = [(u, u + os.sep) for u in self.unread]
        # the sources read once, by path: `kenning repair` gives every indexed file as a root, and
        # reading them all again for each root was quadratic in the files indexed
        sources = sorted(self.store.sources(), key=lambda s: s.path)
        paths = [s.path for s in sources]
        dropped: set[int] = set()
        for root in roots:
            root_key = path_key(Path(root).expanduser().absolute().resolve())
            if any(root_key == u or root_key.startswith(p) for u, p in kept_prefixes):
                continue
            prefix = root_key + os.sep
            inside = []  # the root itself, then every path under it (sorted: they follow it)
            at = bisect.bisect_left(paths, root_key)
            if at < len(paths) and paths[at] == root_key:
                inside.append(sources[at])
            at = bisect.bisect_left(paths, prefix)
            while at < len(paths) and paths[at].startswith(prefix):
                inside.append(sources[at])
                at += 1
            for source in inside:
                kept = any(source.path == u or source.path.startswith(p) for u, p in kept_prefixes)
                if not kept and source.path not in self.seen and source.id not in dropped:
                    dropped.add(source.id)
                    self.run.drop_source(source)


def files_to_reread(
    store,
    paths: Sequence,
    jobs: list[tuple],
    report: IndexReport,
    include_secrets: bool,
    follow_symlinks: bool,
) -> list[tuple]:
    """A forced rebuild empties the index, so it must read again every file the index holds
    beyond this run's paths (other folders, other collections): the files to add to the run,
    each with its collection. A file under this run's paths that the walk no longer yields, or
    one that no longer exists, leaves the index and is counted as removed."""
    roots = [path_key(Path(p).expanduser().absolute().resolve()) for p in paths]
    this_run = {path_key(found.path) for found, _ in jobs}
    by_collection: dict[str, list[str]] = {}
    for source in store.sources():
        if source.path in this_run:
            continue
        under = any(source.path == r or source.path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)
        if under or not os.path.lexists(source.path):
            report.files_removed += 1
            report.chunks_removed += source.n_chunks
            continue
        by_collection.setdefault(source.collection, []).append(source.path)
    more = []
    for name, files in by_collection.items():  # named files: the walk's rules for them still hold
        walked = discover(files, None, None, include_secrets, follow_symlinks, hidden=True)
        more += [(found, name) for found in walked]
    return more


def _make_well_formed(chunk) -> None:
    """A chunk's text and metadata with every unpaired surrogate made U+FFFD: the database, the
    tokenizers and every surface refuse one, and a single one stopped a whole run's commit."""
    if not (chunk.title.isascii() and chunk.body.isascii() and chunk.doc_key.isascii()):
        chunk.title, chunk.body = well_formed(chunk.title), well_formed(chunk.body)
        chunk.doc_key = well_formed(chunk.doc_key)
    if chunk.meta:
        well_formed_data(chunk.meta)
