"""Post-fusion stages and the reranker, run through Index.search: each changes the ranking as its
rule says, and --explain-style data records what it did."""

import json
import os
import time

from tiny_cross_encoder import expected_score, make_cross_encoder

from kenning import Index
from kenning.ingest import ChunkOptions
from kenning.search.postprocess import PostprocessOptions


def test_overlap_dedup_drops_repeated_windows(tmp_path):
    # Message windows of 8 with stride 4 share half their messages with the previous window.
    lines = [
        json.dumps(
            {
                "timestamp": 1_700_000_000 + i * 60,
                "conversation": "ops",
                "sender": "ana",
                "text": f"lighthouse keeper update number {i}",
            }
        )
        for i in range(20)
    ]
    (tmp_path / "chat.jsonl").write_text("\n".join(lines) + "\n")
    ix = Index(tmp_path / "ix")
    ix.add([tmp_path / "chat.jsonl"], options=ChunkOptions(message_window=8, message_stride=4))
    windows = ix.search("lighthouse keeper", limit=20, post=PostprocessOptions(dedup_threshold=None))
    deduped = ix.search("lighthouse keeper", limit=20)
    assert len(windows.hits) == 4 and len(deduped.hits) == 2
    assert len(deduped.dropped) == 2 and "already shown" in deduped.dropped[0]["why"]
    shown = [m for h in deduped.hits for m in h.meta["message_ids"]]
    assert len(shown) == len(set(shown))  # no message twice


def test_recency_cap_and_diversity_through_search(tmp_path):
    now = time.time()
    for name, age_days in (("a_old.md", 400), ("b_new.md", 1)):
        path = tmp_path / name
        path.write_text("# Note\n\nquarterly budget review notes\n")
        os.utime(path, (now - age_days * 86400, now - age_days * 86400))
    ix = Index(tmp_path / "ix")
    ix.add([tmp_path])
    plain = ix.search("budget review")
    recent = ix.search("budget review", post=PostprocessOptions(recency_lambda=0.05))
    assert plain.hits[0].path.endswith("a_old.md")  # equal scores: lower id first
    assert recent.hits[0].path.endswith("b_new.md")
    factor = next(a for a in recent.hits[1].adjustments if a["stage"] == "recency")["factor"]
    assert abs(factor - 1 / (1 + 0.05 * 400)) < 1e-3
    capped = ix.search("budget review", post=PostprocessOptions(cap=1, dedup_threshold=None))
    assert len(capped.hits) == 2  # two documents, one chunk each


def test_cross_encoder_reorders_an_overfetched_pool(tmp_path):
    docs = [
        {"_id": f"d{i}", "title": "", "text": f"animal notes {'zebra ' * z}savanna"}
        for i, z in enumerate([0, 1, 3, 2])
    ]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    ix = Index(tmp_path / "ix")
    ix.add([tmp_path / "corpus.jsonl"])
    model = make_cross_encoder(tmp_path / "tiny-ce")
    response = ix.search("animal notes", limit=3, rerank=f"cross-encoder:{model}")
    texts = {d["_id"]: d["text"] for d in docs}
    scores = [expected_score(texts[h.doc_key]) for h in response.hits]
    assert scores == sorted(scores, reverse=True) and response.hits[0].doc_key == "d2"
    moves = [next(a for a in h.adjustments if a["stage"] == "rerank") for h in response.hits]
    assert [m["after"] for m in moves] == [1, 2, 3] and moves[0]["before"] != 1
    assert response.funnel.channels["rerank"]["pool"] == 4  # the whole corpus fits in max(3 x 3, 30)
