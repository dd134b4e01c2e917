"""One warm index behind every long-running surface: the MCP tools, the HTTP API, the web page and
commands the command line forwards to `kenning serve`.

The service opens the index once and keeps it (its caches, the vector matrix and the embedding
model stay loaded), builds every search with `build_request` over the same defaults the command line
uses (kenning.toml and KENNING_* settings), and returns the same JSON shapes as `--json`. Calls are
serialised by one lock: SQLite connections are not shared between threads mid-call.
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

from kenning.api.index import Index
from kenning.api.own_roots import index_location, remembered
from kenning.api.request import build_request
from kenning.api.settings import load_config, resolve_search
from kenning.models.embed.base import EmbedderError
from kenning.places.locate import find_config
from kenning.query.filters import Filters
from kenning.search.results import glossary_reason, location_text, message_text
from kenning.store import StorageError, is_server_url


def _inside(path: Path, root: Path) -> bool:
    """Whether `path` (links and `..` resolved) is `root` or lies under it."""
    resolved = Path(os.path.realpath(path))
    return resolved == root or resolved.is_relative_to(root)


WINDOW_CHARS = 20_000  # what one MCP or HTTP `get` returns by default: a part an agent's context can hold


class WriteRefused(PermissionError):
    """A writing call on a service started without --allow-write."""


class Service:
    def __init__(self, index_dir: str | Path, allow_write: bool = False, config_start: Path | None = None):
        """Open the index at `index_dir` (a folder or a server store's URL). Only `kenning index`
        creates an index: a mistyped path here is an error naming it, never an empty index served
        as if the evidence were not there."""
        # a folder, or a server store's URL (kept as given: kenning.store.is_server_url)
        self.index_dir = index_dir if is_server_url(index_dir) else Path(index_dir).absolute()
        self.index = Index(self.index_dir, create=False)
        self.allow_write = allow_write
        self.watched: list[Path] = []  # folders `kenning serve --watch` keeps current (writable roots)
        self.defaults = resolve_search({}, load_config(find_config(config_start)))
        self.lock = threading.RLock()

    def close(self) -> None:
        with self.lock:
            self.index.close()

    def warm_up(self) -> str | None:
        """Load what the first real search would otherwise wait for: postings, vectors, the model.
        What stops it (vectors that cannot be compared, a model not at hand) is returned, not raised:
        the server still serves, and each search says the same."""
        with self.lock:
            try:
                mode = {k: v for k, v in self.defaults.items() if k == "mode"}
                self.index.search("warm up", limit=1, **mode)
            except (StorageError, EmbedderError, ValueError, LookupError, OSError) as exc:
                return str(exc)
        return None

    # ------------------------------------------------------------------------------------ reading
    def search(
        self,
        query: str,
        mode: str | None = None,
        limit: int | None = None,
        collections=(),
        paths=(),
        kinds=(),
        since: str | None = None,
        before: str | None = None,
        meta=(),
        explain: bool = False,
        offset: int = 0,
        **knobs,
    ) -> dict:
        """The `--json` of `kenning search` for the same query and settings; with `offset`, the
        `limit` hits after the first `offset` (the same ranking, read further on)."""
        settings = {**self.defaults, **{k: v for k, v in knobs.items() if v is not None}}
        if mode is not None:
            settings["mode"] = mode
        if limit is not None:
            settings["limit"] = limit
        if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
            raise ValueError(f"offset should be a whole number from 0 to {MAX_OFFSET}, got {offset!r}")
        filters = Filters.parse(collections, paths, kinds, since, before, meta)
        request = build_request(query, filters=filters, explain=explain, **settings)
        if offset:
            request = replace(request, limit=request.limit + offset)
        with self.lock:
            result = self.index.search(request).to_dict()
        result["hits"] = result["hits"][offset:]
        result["offset"] = offset
        return result

    def read(self, ref: str, max_chars: int | None = None, offset: int = 0) -> dict | None:
        """A document as `kenning get --json` gives it; with `max_chars`, a window of it that says
        what it left out (the MCP and HTTP surfaces always pass one)."""
        with self.lock:
            document = self.index.read(ref, max_chars=max_chars, offset=offset)
        return None if document is None else document.to_dict()

    def read_many(self, refs, max_chars: int = 50_000) -> dict:
        with self.lock:
            found = self.index.read_many(refs, max_chars=max_chars)
        return {**found, "documents": [d.to_dict() for d in found["documents"]]}

    def sources(self) -> list[dict]:
        """Every indexed file (path, kind, collection, chunks), by path."""
        with self.lock:
            return self.index.sources()

    def status(self) -> dict:
        with self.lock:
            return self.index.status()

    def answer(self, question: str, candidates: int = 20) -> dict:
        """The `--json` of `kenning answer`; the chat model is the user's ($KENNING_LLM), never a caller's."""
        with self.lock:
            return self.index.answer(question, candidates=candidates).to_dict()

    # ------------------------------------------------------------------------------------ writing
    def add(self, paths: list[str], collection: str = "default") -> dict:
        """Index files for an agent or a page: only inside the folders this index already covers
        (`writable_roots`), never elsewhere on the machine."""
        self._may_write()
        with self.lock:
            roots = self.writable_roots()
            for path in paths:
                if not any(_inside(Path(path).expanduser(), root) for root in roots):
                    shown = ", ".join(map(str, roots[:3])) + (" ..." if len(roots) > 3 else "")
                    raise WriteRefused(
                        f"{path} is outside the folders this index covers ({shown or 'none'}): "
                        "index it from the command line first"
                    )
            report = self.index.add(paths, collection=collection)
            embedded = self.index.embed() if self.index.embedding_model() else None
        return {**report.to_dict(), "embedding": embedded.to_dict() if embedded else None}

    def glossary_add(self, canonical: str, aliases: list[str], scope: str = "") -> dict:
        self._may_write()
        with self.lock:
            group = self.index.glossary.add(canonical, aliases, scope)
        return {"group": group, "canonical": canonical, "aliases": aliases, "scope": scope}

    def writable_roots(self) -> list[Path]:
        """The folders writing calls may index in: those this user indexed into this index
        (kenning.api.own_roots: recorded in the user's state folder, never read from the index,
        which anyone may have written), and the folders `--watch` names. The file system's root and
        the home folder itself never count."""
        own = remembered(index_location(self.index.directory, self.index.location))
        folders = set(own) | set(self.watched)
        banned = {Path("/"), Path.home()}
        kept = sorted(f for f in (Path(os.path.realpath(f)) for f in folders) if f not in banned)
        return [f for i, f in enumerate(kept) if not any(_inside(f, g) for g in kept[:i])]

    def _may_write(self) -> None:
        if not self.allow_write:
            raise WriteRefused("this server is read-only: start it with --allow-write to index or curate")


MAX_OFFSET = 10_000  # hits a page may start after: deep enough for any reader, bounded for the server


def hits_text(result: dict, limit_snippet: int = 240) -> str:
    """A short text form of a search result (what an agent reads first)."""
    hits, offset = result["hits"], result.get("offset", 0)
    if not hits and offset:
        return f"No more results after the first {offset} for {result['query']!r}"
    if not hits:
        return f"No results for {result['query']!r}: {result.get('empty_reason')}"
    lines = [f"{len(hits)} result(s) for {result['query']!r}:"]
    for rank, hit in enumerate(hits, offset + 1):
        page_end = (hit.get("meta") or {}).get("page_end")
        lines_at = (hit.get("start_line"), hit.get("end_line"))
        where = location_text(hit["path"] or hit["doc_key"], *lines_at, hit.get("page"), page_end)
        said = [f"score {hit['score']:.3f}"]
        if hit.get("confidence") is not None:
            said.append(f"confidence {hit['confidence']:.2f}")
        evidence = hit.get("evidence") or {}
        if evidence.get("clauses"):
            said.append(f"{evidence['clauses_matched']}/{evidence['clauses']} query words")
        said.append(f"chunk {hit['id']}")
        lines.append(f"{rank}. {hit['title'] or '(untitled)'} — {where} ({', '.join(said)})")
        if hit.get("messages"):  # a chat window: the messages that matched, among their neighbours
            lines += ["  " + message_text(m)[:limit_snippet] for m in hit["messages"]]
        elif hit.get("snippet"):
            lines.append("   " + hit["snippet"][:limit_snippet])
        reasons = hit.get("match_reasons") or []
        lines += [f"   {glossary_reason(r)}" for r in reasons if r.get("glossary_group")]
    lines += [f"note: {n}" for n in result.get("notices", [])]
    return "\n".join(lines)
