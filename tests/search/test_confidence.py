"""Readable scores: idf-weighted coverage, the cosine's standing over the corpus, and a 0-1 confidence."""

import math

import pytest

from kenning import Index
from kenning.search.confidence import MODELS, confidence, features


def test_confidence_rises_with_each_kind_of_evidence():
    none = confidence({"clauses": 3, "clauses_matched": 0, "coverage": 0.0, "cosine_z": None})
    some = confidence({"clauses": 3, "clauses_matched": 1, "coverage": 0.4, "cosine_z": None})
    all_words = confidence({"clauses": 3, "clauses_matched": 3, "coverage": 1.0, "cosine_z": None})
    assert 0.0 < none < some < all_words < 1.0
    low = confidence({"clauses": 2, "clauses_matched": 2, "coverage": 1.0, "cosine_z": 0.0})
    high = confidence({"clauses": 2, "clauses_matched": 2, "coverage": 1.0, "cosine_z": 4.0})
    assert low < high


def test_no_evidence_means_no_confidence_and_missing_vectors_use_the_words_model():
    assert confidence({}) is None
    assert confidence({"clauses": 0, "clauses_matched": 0, "coverage": 0.0, "cosine_z": None}) is None
    inputs = features({"clauses": 2, "clauses_matched": 1, "coverage": 0.5, "cosine_z": None})
    model = MODELS["words_only"]
    expected = 1 / (1 + math.exp(-(model["intercept"] + model["coverage"] * 0.5)))
    assert confidence({"clauses": 2, "clauses_matched": 1, "coverage": 0.5}) == pytest.approx(
        expected, abs=1e-3
    )
    assert inputs == {"coverage": 0.5}


@pytest.fixture
def library(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    filler = "the team wrote this note about the plan for the week. " * 3
    (root / "rare.md").write_text(f"# Rare\n\nThe zeppelin hangar {filler}\n")
    (root / "common.md").write_text(f"# Common\n\nThe project report {filler}\n")
    (root / "both.md").write_text(f"# Both\n\nThe zeppelin project {filler}\n")
    for i in range(8):
        (root / f"other{i}.md").write_text(f"# Other {i}\n\nA project update number {i}. {filler}\n")
    index = Index(tmp_path / "ix")
    index.add([root])
    yield index
    index.close()


def test_coverage_weighs_rare_words_more_and_confidence_follows(library):
    hits = {
        h.path.rsplit("/", 1)[-1]: h
        for h in library.search("zeppelin project", mode="lexical", limit=20).hits
    }
    rare, common, both = hits["rare.md"], hits["common.md"], hits["both.md"]
    for hit in (rare, common):
        assert hit.evidence["clauses_matched"] == 1 and hit.evidence["clauses"] == 2
    assert both.evidence["coverage"] == 1.0
    assert rare.evidence["coverage"] > 0.5 > common.evidence["coverage"] > 0.0
    assert both.confidence > rare.confidence > common.confidence
    assert rare.evidence["cosine_z"] is None  # lexical mode embeds no query


def test_confidence_is_in_the_json_of_a_hybrid_search(library):
    library.embed()
    response = library.search("zeppelin hangar", mode="hybrid", limit=5).to_dict()
    top = response["hits"][0]
    assert top["path"].endswith("rare.md")
    assert 0.0 <= top["confidence"] <= 1.0
    assert top["evidence"]["cosine_z"] is not None and top["evidence"]["cosine_z"] > 0
    others = [h for h in response["hits"][1:] if h["evidence"]["clauses_matched"] == 0]
    assert all(h["confidence"] < top["confidence"] for h in others)
