"""The one cache of an open index: bounded in bytes, and never a reason for a different answer."""

import json

import numpy as np

from kenning import Index
from kenning.common.cache import BoundedCache, IndexCaches


def test_bounded_cache_drops_the_first_stored_first():
    cache = BoundedCache(max_bytes=300)
    cache.put("a", np.zeros(10), 100)
    cache.put("b", np.zeros(10), 100)
    cache.put("c", np.zeros(10), 100)
    assert cache.bytes == 300 and len(cache) == 3
    cache.get("a")  # reading does not reorder (a read is one dictionary lookup)
    cache.put("d", np.zeros(10), 100)
    assert cache.get("a") is None and cache.get("d") is not None and cache.bytes == 300
    cache.put("huge", np.zeros(10), 1000)  # bigger than the budget: not kept at all
    assert cache.get("huge") is None and cache.bytes == 300
    cache.put("b", np.zeros(1), 50)  # replacing an entry counts its new size
    assert cache.bytes == 250
    assert cache.get_or_make("e", lambda: np.ones(3)) is not None and cache.get("e") is not None
    cache.drop(lambda key: key != "c")
    assert cache.get("c") is None


def test_generations_replace_views_and_drop_their_entries():
    caches = IndexCaches(budget_bytes=10_000)
    caches.enter(1)
    caches.bounded.put(("gen", 1, "postings", "x"), np.zeros(3))
    caches.bounded.put(("seg", 7, "postings", "x"), np.zeros(3))
    assert caches.view(1, "speller", lambda: "one") == "one"
    assert caches.view(2, "speller", lambda: "two") == "two"  # a new generation: views made again
    assert caches.bounded.get(("gen", 1, "postings", "x")) is None  # the old generation's entries go
    assert caches.bounded.get(("seg", 7, "postings", "x")) is not None  # segments outlive generations


def test_a_tiny_budget_changes_no_answer_and_is_kept(tmp_path, monkeypatch):
    docs = [
        {"_id": f"d{i}", "title": f"note {i}", "text": f"alpha beta gamma{i % 7} delta{i % 3} omega"}
        for i in range(300)
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in docs))
    queries = ["alpha gamma3", '"beta gamma4"', "delta1 omega", "gamma5 -delta2", "note 17"]
    big = Index(tmp_path / "ix")
    big.add([corpus])
    expected = [[(h.id, round(h.score, 9)) for h in big.search(q, limit=20).hits] for q in queries]
    big.close()
    monkeypatch.setenv("KENNING_CACHE_MB", "0.002")  # about 2 KB: almost nothing fits
    small = Index(tmp_path / "ix")
    for _ in range(3):
        got = [[(h.id, round(h.score, 9)) for h in small.search(q, limit=20).hits] for q in queries]
        assert got == expected
        assert small.caches.bounded.bytes <= small.caches.bounded.max_bytes
    small.close()
