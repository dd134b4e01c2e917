"""`kenning.Index`: the one object the CLI (and the MCP and HTTP surfaces) is a thin layer over.

The Index is the read side: search, get, status, the glossary. Writing goes through an IndexWriter
(kenning.indexing.writer); `add` and `embed` here hand over to it and keep the analyzer they agree on.
Everything an open index keeps between searches lives in one IndexCaches with a size bound.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from pyroaring import BitMap

from kenning.analysis.analyzer import Analyzer, AnalyzerConfig
from kenning.api.own_roots import index_location, remember
from kenning.api.request import build_request
from kenning.api.vectors import IndexVectors
from kenning.common.cache import IndexCaches
from kenning.glossary.glossary import Glossary
from kenning.lexical.view import LexicalIndex
from kenning.models.rerankers import Reranker, make_reranker
from kenning.query.filters import Filters, resolve
from kenning.query.parser import ParsedQuery
from kenning.query.spelling import Speller
from kenning.search.context import SearchContext
from kenning.search.request import MODES, SearchRequest
from kenning.search.results import SearchResponse
from kenning.search.vectors import search_with_vectors
from kenning.signals.substring import SubstringView, TrigramSubstrings
from kenning.store import ChunkRow, IndexDamaged, is_server_url, open_store
from kenning.store.errors import decoding

MAX_CHUNK_ID = 2**63 - 1  # chunk ids are SQLite / PostgreSQL 64-bit integers

if TYPE_CHECKING:  # the write side loads when first used: a search never imports the ingest pipeline
    # (nor the documents API or the entity graph: importing kenning is most of a command's start)
    from kenning.answer.answering import Answer
    from kenning.answer.sources import AnswerSources
    from kenning.api.documents import Document
    from kenning.entities.graph import EntityGraph
    from kenning.indexing.reports import EmbedReport, IndexReport
    from kenning.indexing.tuning import WriterTuning
    from kenning.indexing.writer import IndexWriter
    from kenning.lexical.view import LexicalView
    from kenning.models.chat import ChatModel
    from kenning.models.embed.base import Embedder
    from kenning.store.postgres import PostgresStore

DEFAULT_INDEX_DIR = ".kenning"
SEARCH_MODES = MODES


def default_index_dir() -> Path | str:
    """The index the command line would use here (kenning.api.settings.resolve_index_dir)."""
    from kenning.api.settings import load_config, resolve_index_dir
    from kenning.places.locate import find_config

    return resolve_index_dir(None, load_config(find_config()))


class Index:
    """A kenning index in a directory or on a PostgreSQL server: add files, search, get chunks,
    report status."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        create: bool = True,
        rebuild_outdated: bool = False,
    ) -> None:
        """`directory`: an index folder, or a postgresql:// URL (kenning.store.postgres); None finds
        the folder or server the command line would use here."""
        where = directory if directory is not None else default_index_dir()
        self.directory = None if is_server_url(where) else Path(where)  # a server index has no folder
        self.store = open_store(where, create=create, rebuild_outdated=rebuild_outdated)
        # what messages and reports name: the folder, or the URL without its password
        # (open_store gives a PostgresStore exactly when the location is a server URL)
        self.location = str(self.directory) if self.directory else cast("PostgresStore", self.store).location
        stored = self.store.get_meta("analyzer")
        try:
            with decoding("the analyzer settings"):  # a stemmer for no known language: KeyError
                config = AnalyzerConfig.from_dict(json.loads(stored)) if stored else AnalyzerConfig()
                self.analyzer = Analyzer(config)
        except IndexDamaged:
            self.store.close()
            raise
        self.caches = IndexCaches()
        self.lexical = LexicalIndex(self.store, self.caches, lambda: self.analyzer)
        self._glossary: Glossary | None = None
        self.vectors = IndexVectors(self.store, self.caches)  # models, embedders, dense views
        self._rerankers: dict[str, Reranker | None] = {}

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store (an `Index` is also a context manager that closes it)."""
        self.store.close()

    # ------------------------------------------------------------------------------------ writing
    def writer(self, tuning: WriterTuning | None = None) -> IndexWriter:
        """The write side of this index (files in, vectors in), sharing its store and embedders;
        `tuning`: the sizes that bound a write's memory (kenning.indexing.tuning; None: the defaults)."""
        from kenning.indexing.writer import IndexWriter

        return IndexWriter(self.store, self.analyzer, self.embedder, tuning)

    def add(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        tuning: WriterTuning | None = None,
        **options: Any,
    ) -> IndexReport:
        """Index files and folders (see IndexWriter.add); re-running only redoes what changed."""
        writer = self.writer(tuning)
        given = list(paths) if not isinstance(paths, str | os.PathLike) else [paths]
        report = writer.add(given, **options)
        remember(index_location(self.directory, self.location), given)  # (kenning.api.own_roots)
        if writer.analyzer is not self.analyzer:
            self.analyzer = writer.analyzer
            self._glossary = None
        return report

    def collections(self) -> dict[str, dict[str, int]]:
        """Each collection's files and chunks: {"notes": {"files": 12, "chunks": 80}, ...}."""
        with self.store.reading():
            files, chunks = self.store.collections(), self.store.collection_chunks()
        return {name: {"files": n, "chunks": chunks.get(name, 0)} for name, n in sorted(files.items())}

    def answer(
        self, question: str, llm: str | ChatModel | None = None, candidates: int = 20, **search: Any
    ) -> Answer:
        """A cited answer, or found=False with what the sources do not say (kenning.answer). `llm` is
        a chat model spec or ChatModel (None: $KENNING_LLM, else extractive); `search`: settings for
        every search the answer runs (knobs such as w_graph)."""
        from kenning.answer.answering import answer_question
        from kenning.models.chat import ChatModel, make_chat_model

        model = llm if isinstance(llm, ChatModel) else make_chat_model(llm)
        return answer_question(self.answer_sources(**search), question, llm=model, candidates=candidates)

    def answer_sources(self, **search: Any) -> AnswerSources:
        """What answering reads from this index (kenning.answer.sources): its search, chunks, analyzer,
        idf, entity graph and, when it has vectors, its embedder."""
        from kenning.answer.sources import AnswerSources

        def chunks(ids: list[int]) -> dict[int, ChunkRow]:
            with self.store.reading():
                return self.store.chunks_by_ids(ids)

        def idfs(terms: Iterable[str]) -> list[float]:
            with self.store.reading():
                view = self.lexical.view()
                return [view.idf(t) for t in terms]

        embedder = self.embedder if self.embedding_model() is not None else None
        return AnswerSources(
            self.search, chunks, self.analyzer, idfs, self.entity_graph, embedder, self.caches.bounded, search
        )

    def entity_graph(self) -> EntityGraph:
        """The entity graph of the current generation (built once per generation)."""
        with self.store.reading():
            snapshot = self.store.read_snapshot()
            return self._graph_of(snapshot.generation, snapshot.live)

    def _graph_of(self, generation: int, live: BitMap) -> EntityGraph:
        """A generation's entity graph, built once."""
        from kenning.entities.graph import EntityGraph

        return self.caches.view(
            generation, "graph", lambda: EntityGraph.load(self.store, live, self._word_chunks)
        )

    def _word_chunks(self, words: list[str]) -> dict[str, int]:
        """How many live chunks hold each word in their text, in any case (its index term's body
        postings; titles repeat a document's name in every chunk): the graph tells a name from a
        common word that a heading or a title capitalised by it."""
        terms: dict[str, str] = {}
        for word in words:
            analysed = self.analyzer.terms(word)
            if len(analysed) == 1:
                terms[word] = analysed[0]
        wanted = sorted(set(terms.values()))
        counts: dict[str, int] = {}
        with self.store.reading():
            view = self.lexical.view()
            for start in range(0, len(wanted), 1000):
                for term, postings in view.postings(wanted[start : start + 1000]).items():
                    counts[term] = int(np.count_nonzero(postings.tf_body)) if postings is not None else 0
        return {word: counts.get(term, 0) for word, term in terms.items()}

    def entity_neighbours(self, name: str, limit: int = 20, scoring: str = "relatedness") -> dict[str, Any]:
        """An entity (as written, any case or accents) and its neighbours with a, b, k, z and weight.
        Raises ValueError when no chunk holds it, naming the closest entities."""
        graph = self.entity_graph()
        key = graph.lookup(" ".join(graph.resolve_words(name)))
        if key is None:
            close = graph.similar(name)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ValueError(f"no indexed chunk holds the entity {name!r}{hint}")
        i = graph.index[key]
        return {
            "entity": key,
            "surface": graph.surfaces[i],
            "kind": graph.kinds[i],
            "members": graph.members[i][1:],
            "also_written": graph.member_surfaces[i][1:],
            "chunks": graph.df(key),
            "n": graph.n,
            "scoring": scoring,
            "neighbours": [e.to_dict() for e in graph.neighbours(key, limit, scoring)],
        }

    def rename_collection(self, old: str, new: str) -> int:
        """Give a collection another name (its glossary scope follows); returns the files moved."""
        if not new or not new.strip():
            raise ValueError("the new collection name must not be empty")
        if old not in self.collections():
            raise ValueError(f"no collection {old!r} (kenning collections lists them)")
        if new in self.collections():
            raise ValueError(f"a collection {new!r} exists already")
        with self.store.transaction():
            return self.store.rename_collection(old, new)

    def remove_collection(self, name: str, tuning: WriterTuning | None = None) -> IndexReport:
        """Take a collection's files out of the index (the files on disk are not touched)."""
        if name not in self.collections():
            raise ValueError(f"no collection {name!r} (kenning collections lists them)")
        return self.writer(tuning).remove_collection(name)

    def embed(
        self, embedder: str | Embedder | None = None, tuning: WriterTuning | None = None, **options: Any
    ) -> EmbedReport:
        """Embed chunks that have no vector yet (see IndexWriter.embed)."""
        return self.writer(tuning).embed(embedder, **options)

    # ------------------------------------------------------------------------------------ reading
    def search(self, query: str | ParsedQuery | SearchRequest, **settings: Any) -> SearchResponse:
        """Rank chunks for a query. `settings` are SearchRequest fields and knobs (limit, mode, params,
        fusion, filters, k1, w_dense, ...), read by kenning.api.request.build_request, the same function
        every surface uses, so the defaults are the same everywhere: mode "auto" is hybrid when the
        index has vectors and lexical otherwise (kenning.search.vectors). See kenning.search.pipeline
        for the stages.
        """
        request = query if isinstance(query, SearchRequest) else build_request(query, **settings)
        self._check_collections(request.filters.collections)
        if request.embedder:
            self.embedder(request.embedder)  # the user's own spec: a bad one is an error in any mode
        with self.store.reading():
            return search_with_vectors(self._context(request), request, self.vectors)

    def _check_collections(self, names: Iterable[str]) -> None:
        """A collection the index does not have is a mistake to name, not a scope with no results."""
        if not names:
            return
        with self.store.reading():
            known = self.store.collections()
        unknown = [name for name in names if name not in known]
        if unknown:
            have = ", ".join(repr(name) for name in sorted(known)) or "none yet"
            raise ValueError(
                f"no collection {', '.join(repr(n) for n in unknown)} in this index (it has {have})"
            )

    def _context(self, request: SearchRequest) -> SearchContext:
        """What the search stages read besides the query, over the current snapshot."""
        view = self.lexical.view()
        return SearchContext(
            view=view,
            store=self.store,
            analyzer=self.analyzer,
            glossary=None if self.glossary.is_empty() else self.glossary,
            speller=self._speller() if (request.spell or request.detail == "full") else None,
            resolve_filters=self._resolve_filters,
            reranker=self._reranker(request.rerank),
            graph=lambda: self._graph_of(view.generation, view.live),
            substring=lambda: self._substring_view(view),
        )

    def _substring_view(self, view: LexicalView) -> SubstringView | TrigramSubstrings:
        """The substring signal's view of this generation: the store's trigram index when the index
        has one (`kenning index --substring-index`), else the live texts joined in memory (built once
        per generation)."""
        if self.store.substring_index_enabled():
            return TrigramSubstrings(self.store, view.live_mask)
        return self.caches.view(
            view.generation,
            "substring",
            lambda: SubstringView(self.store, np.frombuffer(view.live.to_array(), np.uint32)),
        )

    def _reranker(self, spec: str | None) -> Reranker | None:
        if not spec or spec == "none":
            return None
        if spec not in self._rerankers:
            self._rerankers[spec] = make_reranker(spec)
        return self._rerankers[spec]

    # ------------------------------------------------------------------------------------ vectors
    def embedding_model(self) -> dict[str, Any] | None:
        """The embedder that made this index's vectors: backend, model, dim, fingerprint, spec."""
        return self.vectors.recorded()

    def embedder(self, spec: str | None = None) -> Embedder:
        """An embedder: `spec` if given, else the model this index records, else the default (minilm).

        A remote model the index records is reached only where the user says (kenning.models.endpoints):
        the index names the model, never the address, so it cannot send your key anywhere. Raises
        EndpointError when the user has not said where that model is served.
        """
        return self.vectors.embedder(spec)

    def register_embedder(self, spec: str, embedder: Embedder) -> None:
        """Use `embedder`, an object built in your own code, wherever `spec` is given (`embed(spec)`,
        `search(..., embedder=spec)`), and for searches when its fingerprint is the index's."""
        self.vectors.embedders[spec] = embedder

    # ------------------------------------------------------------------------------------ helpers
    @property
    def glossary(self) -> Glossary:
        """The glossary stored in this index (alias groups used to expand queries)."""
        if self._glossary is None:
            self._glossary = Glossary(self.store, self.analyzer)
        return self._glossary

    def _speller(self) -> Speller:
        return self.caches.view(self.store.generation(), "speller", lambda: Speller(self.store.vocabulary))

    def _resolve_filters(self, filters: Filters) -> BitMap:
        key = ("gen", self.store.generation(), "filters", filters)
        return self.caches.bounded.get_or_make(key, lambda: resolve(filters, self.store))

    def get(self, ref: str | int) -> list[ChunkRow]:
        """Every chunk of a document (by document id or file path), in order; or one chunk by id,
        written `chunk:42` or `#42` (as results show it). Bare digits name a document when one has
        that id (a BEIR `_id` such as 42), and a chunk only when no document does, so the two never
        mix."""
        from kenning.ingest.walk import path_key  # the ingest package loads only when needed

        with self.store.reading():
            text = str(ref).strip()
            chunk_ref = None
            if isinstance(ref, int):
                chunk_ref = text
            elif text.startswith(("#", "chunk:")):
                chunk_ref = text.split(":", 1)[1] if text.startswith("chunk:") else text[1:]
            if chunk_ref is None:
                path = path_key(Path(text).resolve())
                rows = self.store.chunks_of_doc(text) or self.store.chunks_of_doc(path)
                rows = rows or self._file_chunks(path)
                if rows or not text.isdigit():
                    return rows
                chunk_ref = text
            if not (chunk_ref.isascii() and chunk_ref.isdigit()) or len(chunk_ref) > 19:
                return []
            if int(chunk_ref) > MAX_CHUNK_ID:  # no chunk has it, and SQLite cannot even be asked
                return []
            row = self.store.chunks_by_ids([int(chunk_ref)]).get(int(chunk_ref))
            return [row] if row else []

    def _file_chunks(self, path: str) -> list[ChunkRow]:
        """Every chunk of a file that holds several documents (a BEIR or JSONL corpus file keys its
        chunks by each record's id, not by the path), in file order; [] for no such file."""
        source = self.store.source_by_path(path)
        if source is None:
            return []
        ids = [chunk_id for chunk_id, _ in self.store.chunk_hashes(source.id)]
        found = self.store.chunks_by_ids(ids)
        return [found[i] for i in ids if i in found]

    def read(self, ref: str | int, max_chars: int | None = None, offset: int = 0) -> Document | None:
        """A document (or one chunk, or a line range of a document) as it reads, each line once and
        numbered (kenning.api.documents); None when the index holds nothing under `ref`. With
        `max_chars` (or an `offset`), only the lines from `offset` that fit, and a `window` saying what
        was left out and the offset that reads on. A line range outside the document is a ValueError."""
        from kenning.api.documents import (
            around_message,
            assemble,
            lines_on_pages,
            on_pages,
            parse_message_ref,
            parse_page_ref,
            parse_ref,
            ref_of,
            window,
        )

        ref = ref_of(ref) if isinstance(ref, str) else ref
        rows, line_range = self.get(ref), None
        doc_ref, message_id = parse_message_ref(str(ref)) if not rows else (str(ref), None)
        if message_id is not None:
            whole = self.get(doc_ref)
            rows = around_message(whole, message_id)
            if whole and not rows:
                raise ValueError(f"{ref}: no message {message_id!r} in it")
        doc_ref, pages = parse_page_ref(str(ref)) if not rows and message_id is None else (str(ref), None)
        if pages is not None:
            whole = self.get(doc_ref)
            rows = [row for row in whole if on_pages(row, pages)]
            if whole and not rows:
                held = sorted({row.page for row in whole if row.page is not None})
                have = f"pages {held[0]}-{held[-1]}" if held else "no page numbers"
                asked = f"page {pages[0]}" if pages[0] == pages[1] else f"pages {pages[0]}-{pages[1]}"
                raise ValueError(f"{ref}: {asked} is not in it (it has {have})")
        if not rows and pages is None and message_id is None:
            doc_ref, line_range = parse_ref(str(ref))
            if line_range is None:
                return None
            rows = self.get(doc_ref)
        if not rows:
            return None
        document = assemble(str(ref), rows, line_range, message_id)
        if pages is not None:  # the lines of those pages alone, where the chunks number their lines
            keep = set().union(*(lines_on_pages(row, pages) for row in rows))
            for section in document.sections:
                section.lines = [(n, t) for n, t in section.lines if n is None or n in keep]
            document.sections = [s for s in document.sections if s.lines]
        if line_range is not None and not document.sections:
            numbers = [n for row in rows for n in (row.start_line, row.end_line) if n is not None]
            have = f"lines {min(numbers)}-{max(numbers)}" if numbers else "no line numbers"
            raise ValueError(f"{ref}: lines {line_range[0]}-{line_range[1]} are not in it (it has {have})")
        source = self.store.source_by_path(rows[0].path) if rows[0].path else None
        document.kind = source.kind if source else None
        if max_chars is not None or offset:
            document = window(document, max_chars if max_chars is not None else 2**62, offset)
        return document

    def sources(self) -> list[dict[str, Any]]:
        """Every indexed file: path, kind, collection and chunks, by path."""
        with self.store.reading():
            rows = sorted(self.store.sources(), key=lambda s: s.path)
        return [
            {"path": s.path, "kind": s.kind, "collection": s.collection, "chunks": s.n_chunks} for s in rows
        ]

    def read_many(self, refs: str | list[str], max_chars: int = 50_000) -> dict[str, Any]:
        """Several documents: a glob over the indexed paths (`notes/*.md`) or a list of references,
        until `max_chars`; what did not fit or was not found is listed, never dropped silently."""
        from kenning.api.documents import matching_paths

        if isinstance(refs, str):
            with self.store.reading():
                paths = sorted(s.path for s in self.store.sources())
            refs = matching_paths(paths, refs)
        documents, left_out, missing, used = [], [], [], 0
        for ref in refs:
            document = self.read(ref)
            if document is None:
                missing.append(ref)
            elif used + document.chars > max_chars:  # what does not fit is named, with its size
                left_out.append({"ref": ref, "chars": document.chars})
            else:
                documents.append(document)
                used += document.chars
        return {"documents": documents, "left_out": left_out, "not_found": missing, "max_chars": max_chars}

    def status(self) -> dict[str, Any]:
        """What the index holds: documents, chunks, segments, terms, size, the last commit, the
        analyzer, collections and vector coverage (the `kenning status --json` document)."""
        with self.store.reading():
            counts = self.store.counts()
            snapshot = self.store.read_snapshot()
            return {
                "index": self.location,
                "documents": counts["documents"],
                "sources": counts["sources"],
                "chunks": counts["chunks"],
                "live_chunks": len(snapshot.live),
                "segments": counts["segments"],
                "terms": self.store.count_terms(),  # counted here, not at every write
                "size_bytes": self.store.size_on_disk(),
                "generation": snapshot.generation,
                "last_commit": snapshot.last_commit,
                "analyzer": self.analyzer.config.to_dict(),
                "collections": self.collections(),
                "embedder": self.vectors.status(),
                "substring_index": self.store.substring_index_enabled(),
            }
