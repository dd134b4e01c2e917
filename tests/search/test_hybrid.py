"""Dense vectors, fusion modes and the hybrid pipeline, with a deterministic fake embedder.

The fake embedder hashes words into 1024 dimensions and maps a few synonyms to one dimension, so
"automobile" is close to "car" although they share no letters: a vocabulary gap lexical search
cannot bridge.
"""

import json
import math
import zlib
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kenning import Bm25Params, Index
from kenning.query.filters import Filters
from kenning.search.fusion import Channel, FusionParams, fuse
from kenning.search.notices import NoticeKind
from kenning.signals.dense import DenseView
from kenning.store import StorageError

SYNONYMS = {"automobile": "car", "vehicle": "car", "physician": "doctor"}


class FakeEmbedder:
    backend = "fake"
    dim = 1024

    def __init__(self, model="bag-of-words", fail_after=None):
        self.model = model
        self.calls = 0
        self.embedded = 0
        self.fail_after = fail_after

    def fingerprint(self):
        return f"fake:{self.model}"

    def describe(self):
        return {
            "backend": self.backend,
            "model": self.model,
            "dim": self.dim,
            "fingerprint": self.fingerprint(),
        }

    def embed(self, texts, kind="document"):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-run
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().replace(".", " ").split():
                word = SYNONYMS.get(word, word)
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        self.embedded += len(texts)
        return out


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def corpus(tmp_path):
    write(tmp_path / "docs" / "cars.md", "# Cars\n\nThe car needs new tyres and an oil change.\n")
    write(tmp_path / "docs" / "clinic.md", "# Clinic\n\nThe doctor sees patients on Monday.\n")
    write(tmp_path / "docs" / "release.md", "# Release\n\nVersion v2.3.1 fixes the oil gauge.\n")
    write(tmp_path / "docs" / "misc.md", "# Misc\n\nNothing about engines here, only gardens.\n")
    return tmp_path


@pytest.fixture
def index(corpus):
    ix = Index(corpus / "ix")
    ix.add([corpus / "docs"])
    ix.register_embedder("fake", FakeEmbedder())
    ix.embed("fake")
    yield ix
    ix.close()


def titles(response):
    return [h.title for h in response.hits]


# ------------------------------------------------------------------------------------------ embedding


def test_embed_records_model_and_is_incremental(corpus, index):
    status = index.status()["embedder"]
    assert status["model"] == "bag-of-words" and status["vectors"] == 4 and status["missing"] == 0
    fake = index.embedder("fake")
    assert index.embed("fake").embedded == 0  # nothing new
    write(corpus / "docs" / "clinic.md", "# Clinic\n\nThe doctor sees patients on Tuesday.\n")
    write(corpus / "docs" / "moved.md", "# Cars\n\nThe car needs new tyres and an oil change.\n")
    index.add([corpus / "docs"])
    before = fake.embedded
    report = index.embed("fake")
    assert report.embedded == 1 and fake.embedded - before == 1  # the same text elsewhere is not re-embedded
    assert index.status()["embedder"]["vectors"] == 5


def test_embedding_resumes_after_interruption(corpus):
    for i in range(40):
        write(corpus / "many" / f"n{i}.md", f"# Note {i}\n\nword{i} text\n")
    ix = Index(corpus / "ix2")
    ix.add([corpus / "many"])
    ix.register_embedder("fake", FakeEmbedder(fail_after=2))
    with pytest.raises(KeyboardInterrupt):
        ix.embed("fake", batch_size=4, commit_every=8)
    kept = ix.status()["embedder"]["vectors"]
    assert kept == 8  # the first committed block survived; the half-done one did not
    ix.register_embedder("fake", FakeEmbedder())
    assert ix.embed("fake", batch_size=4, commit_every=8).embedded == 32


def test_embedding_in_slices_with_a_limit(corpus):
    for i in range(10):
        write(corpus / "many" / f"n{i}.md", f"# Note {i}\n\n{'word ' * i}text\n")
    ix = Index(corpus / "ix3")
    ix.add([corpus / "many"])
    ix.register_embedder("fake", FakeEmbedder())
    first = ix.embed("fake", limit=4)
    assert (first.total, first.embedded, first.remaining) == (10, 4, 6)
    assert ix.status()["embedder"]["missing"] == 6
    second = ix.embed("fake")
    assert (second.total, second.embedded, second.remaining) == (6, 6, 0)
    with pytest.raises(ValueError, match="limit"):
        ix.embed("fake", limit=-1)


def test_model_mismatch_is_refused(index):
    index.register_embedder("other", FakeEmbedder(model="another-model"))
    with pytest.raises(StorageError, match="cannot be compared"):
        index.search("car", mode="hybrid", embedder="other")
    with pytest.raises(StorageError, match="would mix models"):
        index.embed("other")
    index.embed("other", replace=True)
    assert index.embedding_model()["model"] == "another-model"
    assert index.search("car", mode="dense", embedder="other").hits


def test_no_vectors_degrades_with_notice(corpus):
    ix = Index(corpus / "plain")
    ix.add([corpus / "docs"])
    response = ix.search("car", mode="hybrid")
    assert "no vectors" in response.notices[-1].text and titles(response) == ["Cars"]
    assert response.notices[-1].kind == NoticeKind.NO_VECTORS
    assert response.to_dict()["notices"][-1] == response.notices[-1].text  # surfaces show the sentence
    with pytest.raises(StorageError, match="no vectors"):
        ix.search("car", mode="dense")


# ------------------------------------------------------------------------------------------ modes


def test_dense_bridges_the_vocabulary_gap(index):
    assert index.search("automobile", mode="lexical").hits == []
    dense = index.search("automobile", mode="dense")
    assert titles(dense)[0] == "Cars" and dense.funnel.channels["dense"]["method"] == "exact"
    hybrid = index.search("automobile", mode="hybrid")
    assert titles(hybrid)[0] == "Cars"
    assert hybrid.hits[0].channels["dense"]["rank"] == 1


def test_vector_only_hits_need_min_similarity_and_are_flagged(index):
    response = index.search("kubernetes", mode="hybrid")
    assert response.hits == [] and response.funnel.channels["dense"]["below_min_similarity"] == 4
    assert "no indexed chunk contains kubernetes" in response.empty_reason
    no_feedback = FusionParams(feedback_k=0)
    response = index.search("automobile", mode="hybrid", fusion=no_feedback)  # close to the car document
    assert titles(response) == ["Cars"]
    assert "only semantically similar" in response.notices[-1].text
    assert index.search("oil", mode="hybrid").notices == []
    partly = index.search("oil zeppelin", mode="hybrid")
    assert partly.to_dict()["notices"] == ["no chunk contains 'zeppelin'; the results match the other words"]
    assert set(titles(partly)) == {"Cars", "Release"}
    assert all(h.evidence["clauses_matched"] == 1 and h.evidence["clauses"] == 2 for h in partly.hits)
    alone = index.search("automobile", mode="hybrid", fusion=no_feedback).hits[0]
    assert alone.evidence["clauses_matched"] == 0 and alone.evidence["query_cosine"] >= 0.3


def test_feedback_learns_from_the_first_pass(index):
    response = index.search("automobile", mode="hybrid")
    feedback = response.funnel.channels["feedback"]
    cars = index.search("automobile", mode="hybrid", fusion=FusionParams(feedback_k=0)).hits[0].id
    assert feedback["from"][0] == cars and feedback["terms"] == ["oil"]  # "tyre" is in one chunk only
    # "Release" shares "oil" with the car document, but the query itself did not find it: feedback
    # reorders what the query found and never admits a chunk on borrowed evidence
    assert titles(response) == ["Cars"]
    anything = FusionParams(min_similarity=-1.0, feedback_k=1)  # the query itself admits every chunk
    without = titles(index.search("automobile", mode="hybrid", fusion=replace(anything, feedback_k=0)))
    with_feedback = index.search("automobile", mode="hybrid", fusion=anything)
    assert without[0] == "Cars" and without.index("Release") > 1
    assert titles(with_feedback)[:2] == ["Cars", "Release"]  # promoted by what it shares with "Cars"
    release = next(h for h in with_feedback.hits if h.title == "Release")
    assert release.channels["lexical"]["query_score"] == 0.0 < release.channels["lexical"]["score"]
    assert release.channels["dense"]["query_cosine"] < release.channels["dense"]["score"]
    assert (
        "feedback"
        not in index.search("automobile", mode="hybrid", fusion=FusionParams(feedback_k=0)).funnel.channels
    )


@pytest.mark.parametrize("k1,title_weight", [(0.5, 1.0), (3.0, 2.5)])
def test_feedback_terms_are_scored_with_the_requests_lexical_knobs(index, k1, title_weight):
    """ "Release" holds no query word, so its lexical score is feedback's alone: gamma x the BM25 of the
    one learned term ("oil"), under the knobs the request gave, not the defaults."""
    anything = FusionParams(min_similarity=-1.0, feedback_k=1)
    knobs = Bm25Params(k1=k1, title_weight=title_weight)
    response = index.search("automobile", mode="hybrid", fusion=anything, params=knobs)
    assert response.funnel.channels["feedback"]["terms"] == ["oil"]
    release = next(h for h in response.hits if h.title == "Release")
    alone = next(h for h in index.search("oil", mode="lexical", params=knobs).hits if h.title == "Release")
    assert release.channels["lexical"]["score"] == pytest.approx(anything.feedback_gamma * alone.score)


def test_rerank_fusion_never_adds_candidates(index):
    fusion = FusionParams(mode="rerank")
    assert index.search("automobile", mode="hybrid", fusion=fusion).hits == []  # honesty rule
    response = index.search("oil", mode="hybrid", fusion=fusion)
    assert set(titles(response)) == {"Cars", "Release"}


def test_blend_ranks_semantic_only_hits_below_lexical(index):
    blend = FusionParams(mode="blend", min_similarity=0.0)
    response = index.search("physician oil", mode="hybrid", fusion=blend, limit=10)
    names = titles(response)
    assert names.index("Clinic") > max(names.index("Cars"), names.index("Release"))


def test_constraints_bind_every_channel(index):
    anything = FusionParams(min_similarity=-1.0)
    response = index.search("automobile -car", mode="hybrid", fusion=anything)
    assert "Cars" not in titles(response)
    response = index.search("automobile", mode="dense", filters=Filters(paths=("*clinic*",)), fusion=anything)
    assert titles(response) == ["Clinic"]
    response = index.search("+oil automobile", mode="hybrid", fusion=anything)
    assert set(titles(response)) <= {"Cars", "Release"}


def test_substring_channel_finds_verbatim_codes(index):
    fusion = FusionParams(mode="rrf", w_substring=1.0)
    response = index.search("v2.3.1", mode="hybrid", fusion=fusion)
    assert titles(response)[0] == "Release"
    assert response.hits[0].channels["substring"]["rank"] == 1
    assert response.funnel.channels["substring"]["words"] == ["v2.3.1"]


def test_pasted_sentence_comes_first_whatever_the_vectors_say(corpus):
    write(
        corpus / "docs" / "manual.md",
        "# Manual\n\nCheck the oil gauge before every long trip, then the tyres.\n",
    )
    for n in range(6):  # chunks the vectors like better: they repeat the sentence's words, not the sentence
        write(
            corpus / "docs" / f"near{n}.md", f"# Near {n}\n\ntrip tyres gauge oil every long check before\n"
        )
    ix = Index(corpus / "ix2")
    ix.add([corpus / "docs"])
    ix.register_embedder("fake", FakeEmbedder())
    ix.embed("fake")
    sentence = "Check the oil gauge before every long trip"
    for mode in ("hybrid", "lexical", "dense"):
        response = ix.search(sentence, mode=mode, embedder="fake", explain=True)
        assert response.hits[0].title == "Manual" and response.hits[0].verbatim, mode
        assert response.funnel.channels["verbatim"]["chunks"] == 1
        assert not any(h.verbatim for h in response.hits[1:])
    short = ix.search("oil gauge", mode="hybrid", embedder="fake")  # a short query is an ordinary phrase
    assert "verbatim" not in short.funnel.channels
    ix.close()


@pytest.mark.parametrize("native", [True, False])
def test_a_pasted_sentence_is_found_word_for_word_inside_a_filter(corpus, monkeypatch, native):
    """The verbatim check among the chunks a filter leaves (fewer than the rarest word's postings, and
    more): the same chunks whether the words' postings are intersected in C or in NumPy."""
    from kenning import kernels

    if native and not kernels.NATIVE:
        pytest.skip("kenning.kernels._native is not built here")
    monkeypatch.setattr(kernels, "NATIVE", native)
    sentence = "Check the oil gauge before every long trip"
    for folder in ("a", "b"):
        for n in range(4):
            text = sentence if n % 2 == 0 else "trip long every before gauge oil the check"
            write(
                corpus / "logs" / folder / f"note{n}.md", f"# Note {folder}{n}\n\n{text}, then the tyres.\n"
            )
    ix = Index(corpus / "ix3")
    ix.add([corpus / "logs"])
    everywhere = ix.search(sentence, mode="lexical")
    assert sorted(h.title for h in everywhere.hits if h.verbatim) == [
        "Note a0",
        "Note a2",
        "Note b0",
        "Note b2",
    ]
    inside = ix.search(sentence, mode="lexical", filters=Filters(paths=("logs/a/*",)))
    assert sorted(h.title for h in inside.hits if h.verbatim) == ["Note a0", "Note a2"]
    assert inside.funnel.channels["verbatim"]["chunks"] == 2
    ix.close()


def test_hybrid_explain_and_json(index):
    response = index.search("oil change", mode="hybrid", explain=True)
    data = json.loads(json.dumps(response.to_dict(), default=str))
    first = data["hits"][0]
    assert set(first["channels"]) == {"lexical", "dense"}
    assert "dense" in data["funnel"]["timings_ms"] and "fuse" in data["funnel"]["timings_ms"]
    weights = data["funnel"]["channels"]["fusion"]["weights"]  # the per-query weighting, explained
    assert data["funnel"]["channels"]["fusion"]["mode"] == "zscore" and set(weights) == {"lexical", "dense"}
    for part in weights.values():
        assert part["normalise"] == "zscore" and part["background_std"] > 0 and 0 <= part["share_of_top"] <= 1
    assert sum(p["share_of_top"] for p in weights.values()) == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------ fusion by hand


def channel(name, pairs, score_of=None):
    ids = np.array([c for c, _ in pairs], dtype=np.int64)
    scores = np.array([s for _, s in pairs])
    lookup = dict(pairs)
    return Channel(
        name, ids, scores, score_of or (lambda q: np.array([lookup.get(c, 0.0) for c in np.asarray(q)]))
    )


def test_rrf_by_hand():
    # The seed's worked example: ranks (sem, bm25, ilike) per chunk, k = 60.
    lex = channel("lexical", [(2, 9), (3, 8), (1, 7)])
    dense = channel("dense", [(1, 0.9), (2, 0.8)])
    fused = fuse({"lexical": lex, "dense": dense}, FusionParams(mode="rrf", rrf_k=60, w_dense=1.0))
    expected = {1: 1 / 63 + 1 / 61, 2: 1 / 61 + 1 / 62, 3: 1 / 62}
    assert fused.ids == [2, 1, 3]
    assert fused.scores == pytest.approx([expected[2], expected[1], expected[3]])
    weighted = fuse({"lexical": lex, "dense": dense}, FusionParams(mode="rrf", w_dense=3.0))
    assert weighted.ids[0] == 1  # 1/63 + 3/61 beats 1/61 + 3/62


def test_norm_by_hand():
    lex = channel("lexical", [(1, 10.0), (2, 5.0)])
    dense = channel(
        "dense", [(3, 0.9), (2, 0.5)], lambda q: np.array([{1: 0.1, 2: 0.5, 3: 0.9}[c] for c in q])
    )
    fused = fuse({"lexical": lex, "dense": dense}, FusionParams(mode="norm", w_lexical=1.0, w_dense=2.0))
    # pool {1,2,3}; lexical raw (10, 5, 0) -> (1, .5, 0); dense raw (.1, .5, .9) -> (0, .5, 1)
    expected = {1: 1.0, 2: 0.5 + 1.0, 3: 2.0}
    assert fused.ids == [3, 2, 1] and fused.scores == pytest.approx([expected[3], expected[2], expected[1]])


def test_zscore_by_hand():
    lex = channel("lexical", [(1, 10.0), (2, 5.0)])
    lex.background = (4.0, 2.0)  # chunks holding a query word score 4 +- 2
    dense = channel(
        "dense", [(3, 0.9), (2, 0.5)], lambda q: np.array([{1: 0.1, 2: 0.5, 3: 0.9}[c] for c in q])
    )
    dense.background = (0.3, 0.2)
    fused = fuse({"lexical": lex, "dense": dense}, FusionParams(mode="zscore", w_dense=2.0))
    # lexical z: (10-4)/2 = 3, (5-4)/2 = .5, (0-4)/2 = -2; dense z: (.1-.3)/.2 = -1, 1, 3
    expected = {1: 3 + 2 * -1, 2: 0.5 + 2 * 1, 3: -2 + 2 * 3}
    assert fused.ids == [3, 2, 1]
    assert fused.scores == pytest.approx([expected[3], expected[2], expected[1]])
    weights = fused.weights
    assert weights["lexical"]["best_z"] == pytest.approx(3.0) and weights["dense"]["best_z"] == pytest.approx(
        3.0
    )
    assert weights["dense"]["background_std"] == 0.2 and weights["dense"]["weight"] == 2.0
    top = [expected[3], expected[2], expected[1]]
    lex_part = max(-2, 0) + 0.5 + 3  # positive parts of each channel over the top results
    dense_part = 6 + 2 + 0
    assert weights["lexical"]["share_of_top"] == pytest.approx(lex_part / (lex_part + dense_part))
    assert sum(top) == pytest.approx(sum(fused.scores))


def test_zscore_follows_the_peaked_channel():
    """The same lexical list counts for more when it stands far out of its background."""
    dense = channel("dense", [(2, 0.9), (1, 0.6)], lambda q: np.array([{1: 0.6, 2: 0.9}[c] for c in q]))
    dense.background = (0.5, 0.1)
    lex = channel("lexical", [(1, 10.0), (2, 2.0)])
    lex.background = (1.0, 0.5)  # a peaked match: chunk 1 is 18 sd above the rest
    assert fuse({"lexical": lex, "dense": dense}, FusionParams(mode="zscore")).ids[0] == 1
    lex.background = (8.0, 4.0)  # the same scores in a collection where 10 is ordinary
    assert fuse({"lexical": lex, "dense": dense}, FusionParams(mode="zscore")).ids[0] == 2


def test_blend_by_hand():
    lex = channel("lexical", [(1, 4.0), (2, 2.0)])
    dense = channel(
        "dense", [(3, 0.8), (2, 0.5)], lambda q: np.array([{1: -0.2, 2: 0.5, 3: 0.8}[c] for c in q])
    )
    fused = fuse({"lexical": lex, "dense": dense}, FusionParams(mode="blend", alpha=1.0))
    # 1: 4 * (1 + 0) (negative cosine clipped); 2: 2 * (1 + 0.5) = 3; 3: semantic only = 0.8
    assert fused.ids == [1, 2, 3] and fused.scores == pytest.approx([4.0, 3.0, 0.8])


def test_rerank_by_hand():
    lex = channel("lexical", [(1, 4.0), (2, 2.0)])
    dense = channel(
        "dense", [(3, 0.9), (2, 0.6)], lambda q: np.array([{1: 0.1, 2: 0.6, 3: 0.9}[c] for c in q])
    )
    fused = fuse({"lexical": lex, "dense": dense}, FusionParams(mode="rerank"))
    assert fused.ids == [2, 1] and 3 not in fused.ids
    empty = fuse({"lexical": channel("lexical", []), "dense": dense}, FusionParams(mode="rerank"))
    assert empty.ids == []


def test_bad_fusion_params():
    with pytest.raises(ValueError, match="unknown fusion"):
        FusionParams(mode="magic")
    with pytest.raises(ValueError, match="w_dense"):
        FusionParams(w_dense=-1)


# ------------------------------------------------------------------------------------------ HNSW


class _Vectors:
    """A store's vectors, and the record of the graph its writer saved (meta VECTOR_GRAPH_META)."""

    def __init__(self, ids, matrix, graph_record=None):
        self.ids, self.matrix, self.graph_record = ids, matrix, graph_record

    def chunk_vectors(self, fingerprint):
        return self.ids, self.matrix

    def get_meta(self, key, default=None):
        return self.graph_record


def test_hnsw_recall_against_exact(tmp_path):
    """The graph the writer saves (kenning.sidefiles.ann), opened by a reader, against exact search."""
    import json

    from kenning.sidefiles.ann import GraphFile

    rng = np.random.default_rng(7)
    n, dim = 4000, 32
    matrix = rng.normal(size=(n, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = np.arange(1, n + 1, dtype=np.int64)
    live = np.ones(n + 1, dtype=bool)
    saved = GraphFile(tmp_path, "f")
    saved.sync(ids, lambda wanted: matrix[wanted - 1], threshold=1000)
    store = _Vectors(ids, matrix, json.dumps(saved.stamp_for(ids)))
    exact = DenseView(_Vectors(ids, matrix), "f", live, hnsw_threshold=1000)  # no saved graph: exact
    graph = DenseView(store, "f", live, hnsw_threshold=1000, graph_file=saved)
    assert exact.method == "exact" and graph.method == "hnsw" and graph.graph_source == "file"
    recall = []
    for _ in range(50):
        q = rng.normal(size=dim).astype(np.float32)
        q /= np.linalg.norm(q)
        truth = set(exact.search(q, 10)[0].tolist())
        found = set(graph.search(q, 10)[0].tolist())
        recall.append(len(truth & found) / 10)
    assert np.mean(recall) >= 0.95
    allowed = np.zeros(n + 1, dtype=bool)
    allowed[ids[::50]] = True  # a tight filter falls back to exact search over the allowed chunks
    q = matrix[0]
    got, _ = graph.search(q, 10, allowed)
    want, _ = exact.search(q, 10, allowed)
    assert got.tolist() == want.tolist()


def test_cosine_scores_are_cosines(index):
    response = index.search("doctor", mode="dense")
    assert math.isclose(response.hits[0].score, response.hits[0].channels["dense"]["score"])
    assert -1.0 <= response.hits[-1].score <= 1.0


def test_mmr_and_diversity_run_through_search(corpus, index):
    from kenning.search.postprocess import PostprocessOptions

    write(corpus / "docs" / "cars2.md", "# Cars again\n\nThe car needs new tyres and an oil change soon.\n")
    index.add([corpus / "docs"])
    index.embed("fake")
    anything = FusionParams(min_similarity=-1.0, feedback_k=0)
    plain = index.search("car oil", mode="hybrid", fusion=anything, limit=3)
    diverse = index.search(
        "car oil", mode="hybrid", fusion=anything, limit=3, post=PostprocessOptions(mmr_lambda=0.3)
    )
    assert {h.title for h in plain.hits[:2]} == {"Cars", "Cars again"}  # near-duplicates lead
    assert diverse.hits[1].title not in ("Cars", "Cars again")  # MMR spreads the top
    assert any(a["stage"] == "mmr" for a in diverse.hits[1].adjustments)
    penalised = index.search(
        "car oil",
        mode="hybrid",
        fusion=anything,
        limit=5,
        post=PostprocessOptions(diversity_penalty=0.5, diversity_free=0),
    )
    assert any(a["stage"] == "diversity" for h in penalised.hits for a in h.adjustments)


QUERY_PIECES = st.sampled_from(
    [
        "car",
        "oil",
        "doctor",
        "automobile",
        "v2.3.1",
        "OR",
        "+",
        "-",
        '"',
        "(",
        ")",
        "title:",
        "body:",
        "é",
        "!",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(QUERY_PIECES, max_size=10).map(" ".join) | st.text(max_size=40))
def test_any_text_gets_a_hybrid_answer_without_an_error(index, text):
    for syntax in ("dialect", "plain"):
        response = index.search(text, mode="hybrid", syntax=syntax, embedder="fake", explain=True)
        assert isinstance(response.to_dict(), dict)
        assert response.hits or response.empty_reason or response.notices
