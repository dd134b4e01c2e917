"""The scale benchmark (benchmarks/scale.py): its corpus is deterministic and realistic, and its 10k
tier runs end to end against tantivy (CI runs only this tier; the targets live in the benchmark)."""

import json
import subprocess
import sys
from collections import Counter

import pytest
from locations import REPO as ROOT
from locations import SHARED_DATA

sys.path.insert(0, str(ROOT / "benchmarks"))

import scale  # noqa: E402

DATA = SHARED_DATA
pytestmark = pytest.mark.skipif(not (DATA / "cranfield").exists(), reason="needs ../shared/data (dev sets)")


@pytest.fixture(scope="module")
def stats():
    return scale.dev_statistics(DATA)


def test_corpus_is_deterministic_and_zipfian(tmp_path, stats):
    scale.write_corpus(tmp_path / "a", 2500, stats)
    scale.write_corpus(tmp_path / "b", 2500, stats)
    a = sorted((tmp_path / "a" / "corpus").glob("part-*.jsonl"))
    assert [p.name for p in a] == [f"part-{i:05d}.jsonl" for i in range(25)]  # 100 documents a file
    for p in a:
        assert p.read_bytes() == (tmp_path / "b" / "corpus" / p.name).read_bytes()
    docs = [json.loads(line) for p in a for line in p.read_text().splitlines()]
    assert len(docs) == 2500 and len({d["_id"] for d in docs}) == 2500
    counts = Counter(w for d in docs for w in d["text"].split())
    ranked = [c for _, c in counts.most_common()]
    # a Zipf curve: the top word is far more frequent than the hundredth, and most words are rare
    assert ranked[0] > 20 * ranked[99]
    assert sum(c <= 2 for c in ranked) > len(ranked) / 3
    lengths = sorted(len(d["text"].split()) for d in docs)
    assert lengths[len(lengths) // 10] < 60 and lengths[-len(lengths) // 10] > 200  # passages and sections


def test_queries_mix_common_and_rare_terms_and_match(tmp_path, stats):
    scale.write_corpus(tmp_path, 3000, stats)
    queries = scale.make_queries(tmp_path, stats, 50)
    assert queries == scale.make_queries(tmp_path, stats, 50)
    docs = [
        json.loads(line) for p in (tmp_path / "corpus").glob("*.jsonl") for line in p.read_text().splitlines()
    ]
    df = Counter(w for d in docs for w in set(f"{d['title']} {d['text']}".split()))
    bags = [set(f"{d['title']} {d['text']}".split()) for d in docs]
    for q in queries:
        words = q.split()
        assert 1 <= len(words) <= 6
        assert any(bag.issuperset(words) for bag in bags), q  # one document holds every word
    freqs = sorted(df[w] for q in queries for w in q.split())
    assert freqs[0] < 10 and freqs[-1] > 500  # rare and common terms both occur


def test_ten_thousand_chunk_tier_runs_against_tantivy(tmp_path):
    pytest.importorskip("tantivy", reason="tantivy is in the test extra; install '.[test]'")
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "scale.py"),
            "--chunks",
            "2k,10k",
            "--queries",
            "40",
            "--first",
            "2",
            "--rounds",
            "2",
            "--reindex-runs",
            "2",
            "--build-rounds",
            "2",
            "--soak",
            "400",
            "--work",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    tier = report["tiers"][1]
    for system in ("kenning", "tantivy"):
        row = tier[system]
        assert row["chunks"] == 10_000
        assert row["disk_mb"] > 0 and row["index_peak_mb"] > 0
        assert len(row["index_runs_s"]) == 2 and row["index_s"] == pytest.approx(sum(row["index_runs_s"]) / 2)
        assert 0 < row["warm_p50_ms"] <= row["warm_p95_ms"]
        assert set(row["soak_rss_mb"]) == {"10%", "50%", "100%"}
        growth = report["warm_growth"][system]  # 2k -> 10k, the tiers alternating
        assert growth["growth"] == pytest.approx(growth["large_p50_ms"] / growth["small_p50_ms"])
    assert tier["kenning"]["shards_changed"] == 1
    assert len(tier["kenning"]["reindex_1pct_runs_s"]) == 2 and 0 < tier["kenning"]["reindex_1pct_share"]
    assert len(tier["kenning"]["reindex_steps_s"]) == 3 and 0 < tier["kenning"]["reindex_steps_mean_share"]
    assert (report["warm_growth"]["from"], report["warm_growth"]["to"]) == (2_000, 10_000)
    assert not (tmp_path / "chunks-10000" / "index-kenning-reindexed").exists()  # the copies are gone
