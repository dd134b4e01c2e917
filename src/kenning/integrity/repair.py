"""`kenning repair`: rebuild an index from its source files, keeping what can be trusted, and say
what was dropped.

Everything in an index is derived from files, except three things a user would miss: which files and
collections it covered, its vectors (slow to make again) and its glossary. Repair reads those from
the damaged index as far as they can be read, indexes the files again into a fresh index beside it,
puts back every vector that is still sound (right dimension, finite, unit length) and the glossary,
embeds what is left when the index's model is at hand, and only then swaps the fresh index in. The
damaged one is kept beside it (`NAME.damaged-TIME`), never deleted. When the index cannot be read at
all, `sources` (the folders and files to rebuild from) must be given.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kenning.analysis.analyzer import AnalyzerConfig
from kenning.api.own_roots import index_location, remember, remembered, roots_file
from kenning.glossary.curation import stored_evidence
from kenning.query.filters import DEFAULT_COLLECTION
from kenning.store import StorageError, is_server_url, open_store
from kenning.store.errors import IndexDamaged

UNIT_TOLERANCE = 1e-3


@dataclass
class RepairReport:
    index: str
    moved_aside: str | None = None
    files_reindexed: int = 0
    files_gone: list[str] = field(default_factory=list)
    files_failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    vectors_kept: int = 0
    vectors_dropped: int = 0
    vectors_embedded: int = 0
    glossary_terms: int = 0
    unreadable: list[str] = field(default_factory=list)  # what could not be salvaged, and why
    sound: bool = False  # nothing to repair: verify found the index whole, and nothing was done
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "sound": self.sound,
            "moved_aside": self.moved_aside,
            "files_reindexed": self.files_reindexed,
            "files_gone": self.files_gone,
            "files_failed": [{"path": p, "error": e} for p, e in self.files_failed],
            "chunks": self.chunks,
            "vectors_kept": self.vectors_kept,
            "vectors_dropped": self.vectors_dropped,
            "vectors_embedded": self.vectors_embedded,
            "glossary_terms": self.glossary_terms,
            "unreadable": self.unreadable,
            "notes": self.notes,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class _Salvage:
    """What was read back from the damaged index."""

    sources: dict[str, list[str]] = field(default_factory=dict)  # collection -> file paths
    analyzer: dict | None = None
    embedder: dict | None = None
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # text hash -> sound vector
    dropped_vectors: int = 0
    glossary: list[tuple[str, str, list]] = field(default_factory=list)  # (scope, origin, terms)
    substring_index: bool = False


def repair(
    directory: str | os.PathLike,
    sources: list[str] | None = None,
    embed: bool = True,
    progress=None,
    force: bool = False,
) -> RepairReport:
    """Rebuild the index in `directory` (see the module docstring). `sources` adds folders or files to
    rebuild from (required when the index cannot be read); `embed` makes missing vectors again.

    A sound index (kenning verify finds nothing) is left as it is unless `force` (the report then
    says `sound`). An index the user made read-only (no write permission on its folder or its
    database) is never rebuilt: that would put a writable one in its place."""
    from kenning.api.index import Index  # the facade builds the fresh index: same path as `kenning index`

    started = time.perf_counter()
    if is_server_url(directory):
        raise StorageError(
            "repair rebuilds an index folder; a PostgreSQL store is kept whole by its server (WAL,"
            " backups): `kenning verify` names what is wrong, and `kenning index PATH... --force --store"
            " URL` rebuilds it"
        )
    directory = Path(directory)
    report = RepairReport(index=str(directory))
    if not directory.is_dir():
        raise StorageError(f"no index folder at {directory}")
    for path in (directory, directory / "index.db"):
        if path.exists() and not path.stat().st_mode & 0o222:
            raise StorageError(
                f"{path} is read-only: repair would put a writable index in its place; make it "
                "writable first if you mean to rebuild it"
            )
    if not force and _sound(directory):
        report.sound = True
        report.seconds = time.perf_counter() - started
        return report
    salvage = _salvage(directory, report)
    if salvage.embedder is None and any(
        "cannot be opened" in u or u.startswith("embedder") for u in report.unreadable
    ):
        report.notes.append(
            "the index's vectors could not be read: none were kept, and they are made again only "
            "with `kenning embed` (with the model you want)"
        )
    if sources:
        salvage.sources.setdefault("", []).extend(str(Path(s).expanduser().absolute()) for s in sources)
    if not any(salvage.sources.values()):
        raise StorageError(
            f"nothing to rebuild {directory} from: its list of files cannot be read "
            f"({'; '.join(report.unreadable) or 'it is empty'}); give the folders with "
            "`kenning repair --from PATH...`"
        )
    _remove_abandoned(directory, report)
    fresh = directory.with_name(f"{directory.name}.repairing-{os.getpid()}")
    shutil.rmtree(fresh, ignore_errors=True)
    try:
        stem = AnalyzerConfig.from_dict(salvage.analyzer).stem if salvage.analyzer else None
        with Index(fresh) as ix:
            for collection, paths in salvage.sources.items():
                present = [p for p in paths if os.path.lexists(p)]
                report.files_gone += [p for p in paths if not os.path.lexists(p)]
                if not present:
                    continue
                added = ix.add(
                    present,
                    collection=collection or DEFAULT_COLLECTION,
                    stem=stem,
                    # the list of files comes from the damaged index, which may not be the user's
                    # (a handed-over copy): credentials are left out as in any run without
                    # --include-secrets; hidden files named in the list are read as named files
                    hidden=True,
                    progress=progress,
                    substring_index=salvage.substring_index,
                )
                report.files_reindexed += added.files_indexed
                report.files_failed += added.errors
            _restore_vectors(ix, salvage, report)
            _restore_glossary(ix, salvage, report)
            report.chunks = ix.store.counts()["chunks"]
            if embed and salvage.embedder:
                _embed_the_rest(ix, report)
        report.moved_aside = str(_swap(directory, fresh))
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    finally:  # the folders indexed into the fresh copy are the repaired index's (kenning.api.own_roots)
        _move_roots(fresh, directory)
    report.seconds = time.perf_counter() - started
    return report


def _move_roots(fresh: Path, directory: Path) -> None:
    fresh_key = index_location(fresh, str(fresh))
    roots = remembered(fresh_key)
    roots_file(fresh_key).unlink(missing_ok=True)
    if roots and directory.is_dir():
        remember(index_location(directory, str(directory)), roots)


def _sound(directory: Path) -> bool:
    """Whether `kenning verify` (its default sample) finds nothing wrong with the index."""
    from kenning.api.index import Index
    from kenning.integrity.verify import verify

    try:
        with Index(directory, create=False) as index:
            return verify(index.store, index.analyzer).ok
    except Exception:  # an index that cannot even be opened is not sound
        return False


def _remove_abandoned(directory: Path, report: RepairReport) -> None:
    """Fresh indexes that killed repairs left beside `directory` (`NAME.repairing-PID` whose process
    is gone): a repair stopped by a signal cleans up nothing, and each leaves a whole index behind
    (gigabytes for a large one). Only derived data: the files, and the damaged index, are elsewhere."""
    stem = f"{directory.name}.repairing-"
    for other in directory.parent.iterdir() if directory.parent.is_dir() else ():
        pid = other.name[len(stem) :] if other.name.startswith(stem) else ""
        if pid.isdigit() and other.is_dir() and not _running(int(pid)):
            shutil.rmtree(other, ignore_errors=True)
            report.notes.append(f"removed {other.name}, left by a repair that was stopped")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid < 2**31  # another user's process; an impossible pid runs nowhere
    return True


def _salvage(directory: Path, report: RepairReport) -> _Salvage:
    salvage = _Salvage()
    try:
        store = open_store(directory, create=False)
    except Exception as exc:
        report.unreadable.append(f"the index cannot be opened ({exc})")
        return salvage
    try:
        for what, read in (
            ("files", lambda: _read_sources(store, salvage)),
            (
                "analyzer settings",
                lambda: setattr(salvage, "analyzer", json.loads(store.get_meta("analyzer"))),
            ),
            ("embedder", lambda: _read_vectors(store, salvage)),
            (
                "substring index setting",
                lambda: setattr(salvage, "substring_index", store.substring_index_enabled()),
            ),
            ("glossary", lambda: _read_glossary(store, salvage)),
        ):
            try:
                read()
            except Exception as exc:  # damage shows up as any error: keep what the other parts give
                report.unreadable.append(f"{what}: {type(exc).__name__}: {exc}")
    finally:
        store.close()
    return salvage


def _read_sources(store, salvage: _Salvage) -> None:
    for source in store.sources():
        salvage.sources.setdefault(source.collection, []).append(source.path)


def _read_vectors(store, salvage: _Salvage) -> None:
    raw = store.get_meta("embedder")
    if not raw:
        return
    salvage.embedder = json.loads(raw)
    fingerprint, dim = salvage.embedder["fingerprint"], int(salvage.embedder["dim"])
    for text_hash, fp, vector in store.iter_vectors():
        if fp != fingerprint:
            continue
        sound = (
            vector is not None
            and len(vector) == dim
            and np.isfinite(vector).all()
            and abs(float(np.linalg.norm(vector)) - 1.0) <= UNIT_TOLERANCE
        )
        if sound:
            salvage.vectors[text_hash] = vector
        else:
            salvage.dropped_vectors += 1


def _read_glossary(store, salvage: _Salvage) -> None:
    terms: dict[int, list] = {}
    for term in store.glossary_terms():
        terms.setdefault(term.group_id, []).append(term)
    for group in store.glossary_groups():
        salvage.glossary.append((group.scope, group.origin, terms.get(group.id, [])))


def _restore_vectors(ix, salvage: _Salvage, report: RepairReport) -> None:
    report.vectors_dropped = salvage.dropped_vectors
    if not salvage.embedder or not salvage.vectors:
        return
    wanted = {item.text_hash for item in ix.store.chunks_missing_vectors(salvage.embedder["fingerprint"])}
    keep = [h for h in wanted if h in salvage.vectors]
    with ix.store.transaction():
        ix.store.set_meta("embedder", json.dumps(salvage.embedder))
        if keep:
            ix.store.put_vectors(
                salvage.embedder["fingerprint"], keep, np.vstack([salvage.vectors[h] for h in keep])
            )
    report.vectors_kept = len(keep)


def _restore_glossary(ix, salvage: _Salvage, report: RepairReport) -> None:
    if not salvage.glossary:
        return
    with ix.store.transaction():
        for scope, origin, terms in salvage.glossary:
            group_id = ix.store.add_glossary_group(scope, origin)
            for t in terms:
                ix.store.add_glossary_term(
                    group_id, t.surface, t.key, t.status, t.protected, t.origin, _sound_evidence(t)
                )
                report.glossary_terms += 1


def _sound_evidence(term) -> str | None:
    """A term's evidence as stored, or None when it is not the JSON kenning writes: the term is
    kept, what suggested it is not."""
    if not term.evidence:
        return term.evidence
    try:
        stored_evidence(term)
    except IndexDamaged:
        return None
    return term.evidence


def _embed_the_rest(ix, report: RepairReport) -> None:
    try:
        embedded = ix.embed()
    except Exception as exc:  # the model may be remote and unconfigured, or down: vectors can wait
        report.notes.append(f"chunks without a vector were not embedded ({exc}); run `kenning embed` later")
        return
    report.vectors_embedded = embedded.embedded


def _swap(directory: Path, fresh: Path) -> Path:
    """Put the fresh index where the damaged one was; the damaged one stays beside it."""
    aside = directory.with_name(f"{directory.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while aside.exists():
        aside = aside.with_name(f"{aside.name}-{n}")
        n += 1
    directory.rename(aside)
    try:
        fresh.rename(directory)
    except BaseException:
        aside.rename(directory)
        raise
    return aside
