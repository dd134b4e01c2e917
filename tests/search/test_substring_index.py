"""The substring signal over the store's trigram index gives what the in-memory view gives, and the
index follows every chunk the store adds or deletes."""

import json
import random

import numpy as np
import pytest

from kenning import Index
from kenning.integrity.repair import repair
from kenning.integrity.verify import verify
from kenning.signals.substring import SubstringView, TrigramSubstrings
from kenning.surfaces.cli import main

# codes, versions, accents, a ß that casefolds to ss, words that share trigrams without sharing text
VOCAB = ["ERR_42", "err_420", "v2.3.1", "v2.3.10", "Straße", "strasse", "Dantès", "dantes", "parse_url",
         "parseUrl", "the", "server", "returned", "deploy", "deployed", "abcde", "cdeab", "deab", "naïve",
         "x86_64", "a.b.c", "Q3-2024", "über", "ueber", "tests", "testing"]  # fmt: skip


def write_corpus(folder, rng, files=30):
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(files):
        sections = [
            f"# {rng.choice(VOCAB)} {n}\n\n" + " ".join(rng.choice(VOCAB) for _ in range(rng.randint(3, 40)))
            for _ in range(rng.randint(1, 3))
        ]
        (folder / f"f{n}.md").write_text("\n\n".join(sections) + "\n")


def views(index):
    with index.store.reading():
        view = index.lexical.view()
        live = np.frombuffer(view.live.to_array(), np.uint32)
        return (
            SubstringView(index.store, live),
            TrigramSubstrings(index.store, view.live_mask),
            view.live_mask,
        )


@pytest.mark.parametrize("batch", [256, 3, 1])  # small batches stop reading early: the bound is tested
def test_trigram_view_gives_the_in_memory_scores(tmp_path, monkeypatch, batch):
    monkeypatch.setattr(TrigramSubstrings, "BATCH", batch)
    rng = random.Random(7)
    write_corpus(tmp_path / "docs", rng)
    with Index(tmp_path / "ix") as index:
        index.add([tmp_path / "docs"], substring_index=True)
        memory, trigram, live = views(index)
        assert memory.kind == "memory" and trigram.kind == "trigram"
        live_ids = np.flatnonzero(live)
        for _ in range(80):
            words = [w.casefold() for w in rng.sample(VOCAB, rng.randint(1, 4))]
            words += rng.sample(["deplo", "rse_u", "3.1", "ss", "86_"], rng.randint(0, 2))  # fragments
            words = [w for w in dict.fromkeys(words) if len(w) >= 3]
            k = rng.choice([1, 3, 10, 100])
            allowed = None
            if rng.random() < 0.3:
                allowed = np.zeros(len(live), dtype=bool)
                allowed[rng.sample(list(live_ids), len(live_ids) // 2)] = True
            with index.store.reading():
                want_ids, want_scores, want_of, _ = memory.top(words, k, allowed)
                got_ids, got_scores, got_of, skipped = trigram.top(words, k, allowed)
                some = rng.sample(list(live_ids), 15)
                assert got_of(some).tolist() == want_of(some).tolist(), words
            assert skipped == []
            assert got_ids.tolist() == want_ids.tolist(), (words, k)
            assert got_scores.tolist() == want_scores.tolist(), (words, k)


def notes(tmp_path, **files):
    """A folder of Markdown files, name -> body (under a heading named after the file)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, body in files.items():
        (docs / f"{name}.md").write_text(f"# {name.upper()}\n\n{body}\n")
    return docs


def test_the_index_follows_changed_deleted_and_rebuilt_files(tmp_path):
    docs = notes(tmp_path, a="the zebracode QX_991 lives here", b="nothing special, v7.7.7")
    with Index(tmp_path / "ix") as index:
        index.add([docs])  # before the substring index is on
        report = index.add([docs], substring_index=True)
        assert report.substring_indexed == 2 and index.status()["substring_index"]

        def holders(word):
            with index.store.reading():
                return sorted(index.store.substring_candidates(word).tolist())

        assert len(holders("qx_991")) == 1 and len(holders("7.7.7")) == 1  # backfilled
        (docs / "a.md").write_text("# A\n\nthe code moved away\n")  # changed: the old chunk goes
        (docs / "c.md").write_text("# C\n\nnew home of qx_991\n")
        index.add([docs])
        assert len(holders("qx_991")) == 1 and holders("zebracode") == []  # deleted from the table
        (docs / "b.md").unlink()
        index.add([docs])
        assert holders("7.7.7") == []
        index.add([docs], force=True)  # a rebuild keeps it on and holds only what is there now
        assert index.status()["substring_index"]
        assert len(holders("qx_991")) == 1 and holders("zebracode") == []
        assert verify(index.store, index.analyzer).ok  # the table holds exactly the stored chunks
        with pytest.raises(ValueError, match="under 3 letters"):
            with index.store.reading():
                index.store.substring_candidates("qx")


def test_search_uses_the_index_and_names_the_words_it_cannot_look_up(tmp_path):
    docs = notes(tmp_path, release="version v2.3.1 fixes ERR_42 on x86_64", other="version two, nothing else")
    with Index(tmp_path / "ix") as index:
        index.add([docs], substring_index=True)
        response = index.search("v2.3.1 err_42 v2", mode="hybrid", w_substring=1.0)
        info = response.funnel.channels["substring"]
        assert response.hits[0].title == "RELEASE"
        assert info["index"] == "trigram" and info["skipped"] == ["v2"]


def test_cli_turns_it_on_and_status_says_so(tmp_path, capsys):
    docs = notes(tmp_path, n="some text with ERR_42")
    ix = str(tmp_path / "ix")
    assert main(["index", str(docs), "--index", ix, "--no-embed", "--substring-index"]) == 0
    assert "substring index: on" not in capsys.readouterr().out  # a new index: nothing to backfill
    assert main(["status", "--index", ix, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["substring_index"] is True
    assert main(["status", "--index", ix]) == 0
    assert "trigram index" in capsys.readouterr().out


def test_verify_names_a_substring_index_out_of_step_and_repair_rebuilds_it(tmp_path):
    docs = notes(tmp_path, a="code QX_991 here", b="other text")
    with Index(tmp_path / "ix") as index:
        index.add([docs], substring_index=True)
        assert verify(index.store, index.analyzer).ok
        with index.store.transaction():  # a row goes missing behind the store's back
            index.store.conn.execute(
                "INSERT INTO substrings(substrings, rowid, text) VALUES ('delete', 1, ?)",
                (index.store.substring_texts([1])[1],),
            )
        report = verify(index.store, index.analyzer)
        assert not report.ok and any("substring index does not match" in p.message for p in report.problems)
    repair(tmp_path / "ix", embed=False)
    with Index(tmp_path / "ix") as index:
        assert index.status()["substring_index"] and verify(index.store, index.analyzer).ok
        with index.store.reading():
            assert len(index.store.substring_candidates("qx_991")) == 1
