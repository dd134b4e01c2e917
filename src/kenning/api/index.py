"""`kenning.Index`: the one object the CLI (and the MCP and HTTP surfaces) is a thin layer over.

The Index is the read side: search, get, status, the glossary. Writing goes through an IndexWriter
(kenning.indexing.writer); `add` and `embed` here hand over to it and keep the analyzer they agree on.
Everything an open index keeps between searches lives in one IndexCaches with a size bound.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pyroaring import BitMap

from kenning.analysis.analyzer import Analyzer, AnalyzerConfig
from kenning.api.own_roots import index_location, remember
from kenning.api.request import build_request
from kenning.cache import IndexCaches
from kenning.glossary.glossary import Glossary
from kenning.lexical.view import LexicalIndex
from kenning.models.embed.base import EmbedderError
from kenning.models.endpoints import (
    REMOTE_BACKENDS,
    EndpointError,
    not_configured,
    user_embedder,
    user_endpoint,
)
from kenning.models.recorded import recorded_embedder
from kenning.models.rerankers import make_reranker
from kenning.query.filters import Filters, resolve
from kenning.query.parser import ParsedQuery
from kenning.query.spelling import Speller
from kenning.search.context import SearchContext
from kenning.search.pipeline import run_search
from kenning.search.request import MODES, SearchRequest
from kenning.search.results import SearchResponse
from kenning.sidefiles import ann
from kenning.sidefiles.ann import GraphFile
from kenning.signals.dense import DenseView, NewerVectors, ServerDenseView
from kenning.signals.substring import SubstringView, TrigramSubstrings
from kenning.store import ChunkRow, IndexDamaged, StorageError, is_server_url, open_store
from kenning.store.errors import decoding
from kenning.store.protocols import VectorSearch

MAX_CHUNK_ID = 2**63 - 1  # chunk ids are SQLite / PostgreSQL 64-bit integers

if TYPE_CHECKING:  # the write side loads when first used: a search never imports the ingest pipeline
    # (nor the documents API or the entity graph: importing kenning is most of a command's start)
    from kenning.api.documents import Document
    from kenning.entities.graph import EntityGraph
    from kenning.indexing.tuning import WriterTuning
    from kenning.indexing.writer import EmbedReport, IndexReport, IndexWriter

DEFAULT_INDEX_DIR = ".kenning"
SEARCH_MODES = MODES


def default_index_dir() -> Path:
    """The index the command line would use here (kenning.api.settings.resolve_index_dir)."""
    from kenning.api.settings import load_config, resolve_index_dir
    from kenning.locate import find_config

    return resolve_index_dir(None, load_config(find_config()))


class Index:
    """A kenning index in a directory or on a PostgreSQL server: add files, search, get chunks,
    report status."""

    def __init__(
        self, directory: str | os.PathLike | None = None, create: bool = True, rebuild_outdated: bool = False
    ):
        """`directory`: an index folder, or a postgresql:// URL (kenning.store.postgres); None finds
        the folder or server the command line would use here."""
        where = directory if directory is not None else default_index_dir()
        self.directory = None if is_server_url(where) else Path(where)  # a server index has no folder
        self.store = open_store(where, create=create, rebuild_outdated=rebuild_outdated)
        # what messages and reports name: the folder, or the URL without its password
        self.location = str(self.directory) if self.directory else self.store.location
        stored = self.store.get_meta("analyzer")
        try:
            with decoding("the analyzer settings"):
                config = AnalyzerConfig.from_dict(json.loads(stored)) if stored else AnalyzerConfig()
        except IndexDamaged:
            self.store.close()
            raise
        self.analyzer = Analyzer(config)
        self.caches = IndexCaches()
        self.lexical = LexicalIndex(self.store, self.caches, lambda: self.analyzer)
        self._glossary = None
        self._embedders: dict[str, object] = {}
        self._rerankers: dict[str, object] = {}
        self._newer = NewerVectors()  # vectors a saved graph lacks, read once (kenning.signals.dense)

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------------------------ writing
    def writer(self, tuning: WriterTuning | None = None) -> IndexWriter:
        """The write side of this index (files in, vectors in), sharing its store and embedders;
        `tuning`: the sizes that bound a write's memory (kenning.indexing.tuning; None: the defaults)."""
        from kenning.indexing.writer import IndexWriter

        return IndexWriter(self.store, self.analyzer, self.embedder, tuning)

    def add(self, paths, tuning: WriterTuning | None = None, **options) -> IndexReport:
        """Index files and folders (see IndexWriter.add); re-running only redoes what changed."""
        writer = self.writer(tuning)
        paths = list(paths) if not isinstance(paths, str | os.PathLike) else [paths]
        report = writer.add(paths, **options)
        remember(index_location(self.directory, self.location), paths)  # (kenning.api.own_roots)
        if writer.analyzer is not self.analyzer:
            self.analyzer = writer.analyzer
            self._glossary = None
        return report

    def collections(self) -> dict[str, dict]:
        """Each collection's files and chunks: {"notes": {"files": 12, "chunks": 80}, ...}."""
        with self.store.reading():
            files, chunks = self.store.collections(), self.store.collection_chunks()
        return {name: {"files": n, "chunks": chunks.get(name, 0)} for name, n in sorted(files.items())}

    def answer(self, question: str, llm=None, candidates: int = 20):
        """A cited answer, or found=False with what the sources do not say (kenning.answer). `llm` is
        a chat model spec or ChatModel (None: $KENNING_LLM, else extractive)."""
        from kenning.answer.answering import answer_question
        from kenning.models.chat import ChatModel, make_chat_model

        model = llm if isinstance(llm, ChatModel) else make_chat_model(llm)
        return answer_question(self, question, llm=model, candidates=candidates)

    def entity_graph(self) -> EntityGraph:
        """The entity graph of the current generation (built once per generation)."""
        with self.store.reading():
            snapshot = self.store.read_snapshot()
            return self._graph_of(snapshot.generation, snapshot.live)

    def _graph_of(self, generation: int, live: BitMap) -> EntityGraph:
        """A generation's entity graph, built once."""
        from kenning.entities.graph import EntityGraph

        return self.caches.view(generation, "graph", lambda: EntityGraph.load(self.store, live))

    def entity_neighbours(self, name: str, limit: int = 20, scoring: str = "relatedness") -> dict:
        """An entity (as written, any case or accents) and its neighbours with a, b, k, z and weight.
        Raises ValueError when no chunk holds it, naming the closest entities."""
        graph = self.entity_graph()
        found = graph.resolve(name)
        key = found[0] if len(found) == 1 and found[0] == " ".join(graph.resolve_words(name)) else None
        if key is None:
            close = graph.similar(name)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ValueError(f"no indexed chunk holds the entity {name!r}{hint}")
        i = graph.index[key]
        return {
            "entity": key,
            "surface": graph.surfaces[i],
            "kind": graph.kinds[i],
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

    def embed(self, embedder=None, tuning: WriterTuning | None = None, **options) -> EmbedReport:
        """Embed chunks that have no vector yet (see IndexWriter.embed)."""
        return self.writer(tuning).embed(embedder, **options)

    # ------------------------------------------------------------------------------------ reading
    def search(self, query: str | ParsedQuery | SearchRequest, **settings) -> SearchResponse:
        """Rank chunks for a query. `settings` are SearchRequest fields and knobs (limit, mode, params,
        fusion, filters, k1, w_dense, ...), read by kenning.api.request.build_request, the same function
        every surface uses, so the defaults are the same everywhere: mode "auto" is hybrid when the
        index has vectors and lexical otherwise. See kenning.search.pipeline for the stages.
        """
        request = query if isinstance(query, SearchRequest) else build_request(query, **settings)
        if request.embedder:
            self.embedder(request.embedder)  # the user's own spec: a bad one is an error in any mode
        with self.store.reading():
            view = self.lexical.view()
            ctx = SearchContext(
                view=view,
                store=self.store,
                analyzer=self.analyzer,
                glossary=None if self.glossary.is_empty() else self.glossary,
                speller=self._speller() if (request.spell or request.detail == "full") else None,
                resolve_filters=self._resolve_filters,
                reranker=self._reranker(request.rerank),
            )
            ctx.graph = lambda: self._graph_of(view.generation, view.live)
            ctx.substring = lambda: self._substring_view(view)
            mode = request.mode
            if mode == "auto":
                recorded = self.caches.view(view.generation, "embedder", self.embedding_model)
                mode = "hybrid" if recorded else "lexical"
            notice = self._attach_vectors(ctx, mode, request.embedder) if mode != "lexical" else None
            if notice and not _needs_no_vectors(request):
                mode = "lexical"
            elif notice:
                notice = notice.replace("searched lexically", "fused the signals that need none")
            try:
                response = run_search(ctx, request, mode)
            except EmbedderError as exc:  # the embedding server is down or too slow: answer lexically
                if mode == "dense":
                    raise
                ctx.dense = ctx.embed_query = None
                response = run_search(ctx, request, "lexical")
                notice = f"the query could not be embedded ({exc}): searched lexically"
            if notice:
                response.notices.append(notice)
            return response

    def _substring_view(self, view):
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

    def _reranker(self, spec: str | None):
        if not spec or spec == "none":
            return None
        if spec not in self._rerankers:
            self._rerankers[spec] = make_reranker(spec)
        return self._rerankers[spec]

    # ------------------------------------------------------------------------------------ vectors
    def embedding_model(self) -> dict | None:
        """The embedder that made this index's vectors: backend, model, dim, fingerprint, spec."""
        return recorded_embedder(self.store)

    def embedder(self, spec: str | None = None):
        """An embedder: `spec` if given, else the model this index records, else the default (minilm).

        A remote model the index records is reached only where the user says (kenning.models.endpoints):
        the index names the model, never the address, so it cannot send your key anywhere. Raises
        EndpointError when the user has not said where that model is served.
        """
        if not spec:
            recorded = self.embedding_model()
            chosen = self._chosen_embedder(recorded)
            if chosen is not None:
                return chosen
            spec = self._recorded_spec(recorded)
        wanted = spec
        if wanted not in self._embedders:
            from kenning.models.embed import make_embedder  # loads model code only when vectors are used

            self._embedders[wanted] = make_embedder(wanted)
        return self._embedders[wanted]

    def _chosen_embedder(self, recorded: dict | None):
        """An embedder this process already built or was handed (by the caller, never by the index)
        whose fingerprint is the one the index records (`recorded`), so a search reuses the model that
        embedded."""
        if recorded is None:
            return None
        for embedder in self._embedders.values():
            if embedder.describe().get("fingerprint") == recorded["fingerprint"]:
                return embedder
        return None

    def _recorded_spec(self, recorded: dict | None) -> str:
        """The spec that rebuilds the model the index records (`recorded`), from the record only where
        kenning ships the model (minilm); a remote model's address and a model folder come from the
        user (kenning.models.recorded, kenning.models.endpoints), or this raises EndpointError saying
        how to give them."""
        if recorded is None:
            return "minilm"
        backend, model = recorded["backend"], recorded["model"]
        if backend in ("minilm", "none"):
            return recorded["spec"]  # "minilm", "minilm:float32" or "none": built in
        if backend in REMOTE_BACKENDS:
            url = user_endpoint(backend)
            if url is None:
                raise EndpointError(not_configured(backend, model))
            return f"{backend}:{model}@{url}"
        given = user_embedder() if backend == "sentence-transformers" else None
        if given is None:
            raise EndpointError(
                f"this index's vectors come from {backend} model {model!r}, and kenning never loads a "
                f"model an index names: give --embedder {backend}:DIR, or set KENNING_EMBEDDER"
                if backend == "sentence-transformers"
                else f"this index's vectors come from an unknown embedder {backend!r}: give --embedder"
            )
        return given

    def _attach_vectors(self, ctx: SearchContext, mode: str, spec: str | None) -> str | None:
        """Give the search its dense view and query embedder; a notice when there are no vectors."""
        recorded = self.embedding_model()
        if recorded is None:
            if mode == "dense":
                raise StorageError(
                    "this index has no vectors: run `kenning embed` (or index without --no-embed)"
                )
            return "this index has no vectors yet (run `kenning embed`): searched lexically"
        try:
            embedder = self.embedder(spec)
            if not embedder.dim and spec is None:
                embedder.dim = recorded["dim"]  # a remote model's dimension, known without asking it
            fingerprint = embedder.fingerprint()
        except EndpointError as exc:
            if mode == "dense":
                raise
            return f"{exc}: searched lexically"
        except EmbedderError as exc:
            if mode == "dense":
                raise
            return f"the query could not be embedded ({exc}): searched lexically"
        if fingerprint != recorded["fingerprint"] and (recorded["backend"], recorded["model"]) == (
            embedder.backend,
            embedder.model,
        ):
            raise StorageError(
                f"this index's record of {recorded['model']} ({recorded['backend']}) has a fingerprint that "
                "model does not give here, so its vectors cannot be compared with a query (another build, "
                "or a changed record: `kenning verify` checks it; `kenning embed --replace` re-embeds)"
            )
        if fingerprint != recorded["fingerprint"]:
            raise StorageError(
                f"this index's vectors come from {recorded['model']} "
                f"({recorded['backend']}, {recorded['dim']}-d); "
                f"a query embedded with {embedder.model} ({embedder.backend}) cannot be compared with them"
                + (
                    "; a remote model's vectors belong to the server address that made them: reach it "
                    "there, or re-embed with `kenning embed --replace`"
                    if recorded["backend"] in REMOTE_BACKENDS
                    else ""
                )
            )
        view = ctx.view
        ctx.dense = self.caches.view(
            view.generation, ("dense", recorded["fingerprint"]), lambda: self._dense_view(recorded, view)
        )
        ctx.embed_query = lambda text: embedder.embed([text], kind="query")[0]
        return None

    # ------------------------------------------------------------------------------------ helpers
    def _dense_view(self, recorded: dict, view):
        """The server's own vector index when the store keeps one and the index is large enough to
        use it (kenning.signals.dense.ServerDenseView); else the vectors, exact or through the
        graph file beside a folder index."""
        fingerprint = recorded["fingerprint"]
        if (
            isinstance(self.store, VectorSearch)
            and len(view.live) >= ann.HNSW_THRESHOLD
            and self.store.vector_index_ready(fingerprint)
        ):
            return ServerDenseView(self.store, fingerprint, view.live_mask, recorded["dim"])
        return DenseView(
            self.store, fingerprint, view.live_mask, graph_file=self._graph_file(recorded), newer=self._newer
        )

    def _graph_file(self, recorded: dict) -> GraphFile | None:
        directory = self.store.directory
        return GraphFile(directory, recorded["fingerprint"]) if directory else None

    @property
    def glossary(self):
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

    def read(self, ref: str | int) -> Document | None:
        """A document (or one chunk, or a line range of a document) as it reads, each line once and
        numbered (kenning.api.documents); None when the index holds nothing under `ref`."""
        from kenning.api.documents import assemble, parse_ref

        rows, line_range = self.get(ref), None
        if not rows:
            doc_ref, line_range = parse_ref(str(ref))
            if line_range is None:
                return None
            rows = self.get(doc_ref)
        if not rows:
            return None
        document = assemble(str(ref), rows, line_range)
        source = self.store.source_by_path(rows[0].path) if rows[0].path else None
        document.kind = source.kind if source else None
        return document

    def read_many(self, refs: str | list[str], max_chars: int = 50_000) -> dict:
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

    def status(self) -> dict:
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
                "embedder": self._vector_status(),
                "substring_index": self.store.substring_index_enabled(),
            }

    def _vector_status(self) -> dict | None:
        recorded = self.embedding_model()
        if recorded is None:
            return None
        have = self.store.count_vectors(recorded["fingerprint"])
        return {**recorded, "vectors": have, "missing": self.store.counts()["chunks"] - have}


def _needs_no_vectors(request) -> bool:
    """True when a hybrid search asks for a signal besides lexical and dense (the entity graph, the
    substring channel): without vectors it still fuses them rather than falling back to BM25 alone."""
    if request.mode != "hybrid" or request.fusion.mode == "rerank":
        return False
    return any(w > 0 for name, w in request.fusion.weights if name not in ("lexical", "dense"))
