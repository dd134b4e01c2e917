"""Dynamic pruning returns exactly the exhaustive top k (same chunks, same order, same scores to the
last bit) on random queries over a random corpus, and the funnel says what it skipped."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

import kenning.lexical.pruning as pruning
from kenning import Index, kernels
from kenning.surfaces.render import funnel_lines

WORDS = [f"w{i}" for i in range(400)]
# Zipf-like: a few words everywhere, most rare
WEIGHTS = [1.0 / (i + 1) for i in range(len(WORDS))]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    rng = random.Random(7)
    root = tmp_path_factory.mktemp("pruning")
    corpus = root / "corpus.jsonl"
    lines = []
    for n in range(3000):
        title = " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(0, 3)))
        text = " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(3, 80)))
        lines.append(json.dumps({"_id": f"d{n}", "title": title, "text": text}))
    corpus.write_text("\n".join(lines) + "\n")
    ix = Index(root / "ix")
    ix.add([corpus], progress=False)
    yield ix
    ix.close()


def random_query(rng: random.Random) -> str:
    words = [rng.choice(WORDS[:20]) for _ in range(rng.randint(0, 3))]  # common
    words += [rng.choice(WORDS[20:]) for _ in range(rng.randint(1, 4))]  # rare
    if rng.random() < 0.2:
        words.append(words[0])  # a repeated word: k3 weighting
    if rng.random() < 0.15:
        words.append(f"-{rng.choice(WORDS[:40])}")  # an exclusion: survivors are a subset
    if rng.random() < 0.15:
        words[0] = f"title:{words[0]}"
    rng.shuffle(words)
    return " ".join(words)


def ranking(ix, query, **settings):
    response = ix.search(query, mode="lexical", detail="heads", **settings)
    return [(h.id, h.score) for h in response.hits], response.funnel


@pytest.fixture(params=["C", "NumPy"])
def loops(request, monkeypatch, index):
    """Pruning as built here (MaxScore in kenning.kernels._native), and as NumPy runs it where that is not
    built (block maxima over id blocks). The index forgets what it kept, so that its views, postings
    and weights are made by the path under test."""
    if request.param == "C" and not kernels.NATIVE:
        pytest.skip("kenning.kernels._native is not built here")
    if request.param == "NumPy":
        monkeypatch.setattr(kernels, "_native", None)
        monkeypatch.setattr(kernels, "NATIVE", False)
    index.caches.clear()
    yield request.param
    index.caches.clear()


@pytest.mark.parametrize("share", [1.0, pruning.MAX_SCORED_SHARE])
def test_pruned_top_k_equals_exhaustive_on_random_queries(index, monkeypatch, share, loops):
    monkeypatch.setattr(pruning, "PRUNE_FROM_IDS", 0)
    monkeypatch.setattr(pruning, "MAXSCORE_FROM_IDS", 0)
    monkeypatch.setattr(pruning, "MAX_SCORED_SHARE", share)
    rng = random.Random(11)
    pruned_queries = 0
    for _ in range(150):
        query = random_query(rng)
        settings = {
            "limit": rng.choice([1, 3, 10, 40]),
            "variant": rng.choice(["classic", "plus", "l"]),
            "coord_floor": rng.choice([0.0, 0.5, 1.0]),
            "k1": rng.choice([0.5, 0.9, 1.6]),
            "coordination": rng.choice(["clauses", "idf"]),
        }
        fast, funnel = ranking(index, query, pruning=True, **settings)
        full, _ = ranking(index, query, pruning=False, **settings)
        assert fast == full, (query, settings)
        if "pruning" in funnel.channels:
            pruned_queries += 1
            counts = funnel.channels["pruning"]
            assert counts["scored"] + counts["skipped"] == funnel.filtered
    # the comparison means something only if pruning ran (always when any share may be scored)
    assert pruned_queries >= (120 if share == 1.0 else 1)


def test_pruning_skips_chunks_and_explain_still_reports_every_term(index, monkeypatch, loops):
    monkeypatch.setattr(pruning, "PRUNE_FROM_IDS", 0)
    monkeypatch.setattr(pruning, "MAXSCORE_FROM_IDS", 0)
    monkeypatch.setattr(pruning, "MAX_SCORED_SHARE", 1.0)
    query = "w0 w1 w2 w300"
    response = index.search(query, mode="lexical", limit=5, explain=True)
    counts = response.funnel.channels["pruning"]
    assert counts["skipped"] > 0 and counts["scored"] == response.funnel.scored < response.funnel.filtered
    assert any("pruning:" in line for line in funnel_lines(response.funnel))
    full = index.search(query, mode="lexical", limit=5, explain=True, pruning=False)
    assert [h.id for h in response.hits] == [h.id for h in full.hits]
    for hit, same in zip(response.hits, full.hits, strict=True):
        assert hit.explain["lexical"] == same.explain["lexical"]
        assert hit.explain["lexical"]["score"] == pytest.approx(hit.score, rel=1e-12)
        assert {row["term"] for row in hit.explain["lexical"]["terms"]} == {"w0", "w1", "w2", "w300"}


def test_phrases_small_indexes_and_other_modes_score_exhaustively(index, monkeypatch):
    query = "w0 w1 w2 w300"
    assert "pruning" not in index.search(query, mode="lexical", limit=5).funnel.channels  # 3,000 ids
    monkeypatch.setattr(pruning, "PRUNE_FROM_IDS", 0)
    monkeypatch.setattr(pruning, "MAXSCORE_FROM_IDS", 0)
    monkeypatch.setattr(pruning, "MAX_SCORED_SHARE", 1.0)
    assert "pruning" in index.search(query, mode="lexical", limit=5).funnel.channels
    assert "pruning" not in index.search('"w0 w1" w300', mode="lexical", limit=5).funnel.channels
    assert "pruning" not in index.search(query, mode="lexical", limit=5, pruning=False).funnel.channels


def test_phrases_checked_on_text_match_phrases_checked_on_positions(index, monkeypatch):
    """A few phrase candidates are checked on their re-analysed text, many on stored positions: both
    give the same chunks (random phrases cut from the corpus, and random word pairs)."""
    import kenning.lexical.view as lexical

    rng = random.Random(5)
    with index.store.reading():
        view = index.lexical.view()
        rows = index.store.chunks_by_ids(list(range(1, 200)))
        phrases = []
        for row in list(rows.values())[:60]:
            words = row.body.split()
            start = rng.randrange(max(1, len(words) - 3))
            phrases.append(" ".join(words[start : start + rng.randint(2, 3)]))
        phrases += [f"{rng.choice(WORDS[:30])} {rng.choice(WORDS[:30])}" for _ in range(40)]
        checked = 0
        for phrase in phrases:
            spec = list(
                zip(index.analyzer.query_terms(phrase, remove_stopwords=False), range(9), strict=False)
            )
            candidates = view.live
            for field in (None, "body", "title"):
                monkeypatch.setattr(lexical, "PHRASE_TEXT_CHECK", 10**9)
                by_text = view.phrase_docs(spec, candidates, field)
                monkeypatch.setattr(lexical, "PHRASE_TEXT_CHECK", 0)
                by_positions = view.phrase_docs(spec, candidates, field)
                assert by_text == by_positions, (phrase, field)
                checked += len(by_text) > 0
    assert checked > 60


def _count_calls(monkeypatch, method: str) -> list:
    """A list that gets an entry each time LexicalView.`method` is called: `_sub_phrase_docs` when
    a phrase check narrows by the words already read, `_phrase_in_text` when it re-analyses its
    candidates' text."""
    import kenning.lexical.view as lexical

    calls = []
    original = getattr(lexical.LexicalView, method)
    monkeypatch.setattr(lexical.LexicalView, method, lambda *a: calls.append(1) or original(*a))
    return calls


def _cut_phrases(index, rows, rng, length, swap=False):
    """Phrases cut from the rows' bodies, `length()` words each (two of them swapped in about half when
    `swap`), that hold at least three distinct terms: (phrase, spec, distinct terms) each."""
    for row in rows:
        words = row.body.split()
        start = rng.randrange(max(1, len(words) - 5))
        phrase = words[start : start + length()]
        if swap and rng.random() < 0.5:
            phrase[1], phrase[2] = phrase[2], phrase[1]
        terms = index.analyzer.query_terms(" ".join(phrase), remove_stopwords=False)
        distinct = list(dict.fromkeys(terms))
        if len(distinct) >= 3:
            yield " ".join(phrase), list(zip(terms, range(9), strict=False)), distinct


def _holding_all(view, postings, terms) -> BitMap:
    """The live chunks holding every one of `terms` (their postings in `postings`)."""
    candidates = BitMap(view.live)
    for term in terms:
        candidates &= postings[term].bitmap
    return candidates


def test_a_phrase_narrowed_by_its_read_words_first_matches_the_full_check(index, monkeypatch):
    """When the words whose postings are already read leave many candidates, their own positions
    narrow them before a common word's postings are read; the chunks found are the ones the stored
    positions of every word give (random phrases cut from the corpus, several words already read)."""
    import kenning.lexical.view as lexical

    rng = random.Random(11)
    monkeypatch.setattr(lexical, "PHRASE_TEXT_CHECK", 3)
    narrowings = _count_calls(monkeypatch, "_sub_phrase_docs")
    with index.store.reading():
        view = index.lexical.view()
        rows = list(index.store.chunks_by_ids(list(range(1, 400))).values())
        checked = found = 0
        for phrase, spec, distinct in _cut_phrases(index, rows[:80], rng, lambda: rng.randint(3, 5)):
            for field in (None, "body"):
                expected = view._phrase_by_positions(spec, view.live, field)
                view.cache.drop(lambda key: False)  # nothing read yet
                view.postings(distinct[:-1])  # every word read but one
                assert view.phrase_docs(spec, view.live, field) == expected, (phrase, field)
                checked += 1
                found += len(expected) > 0
    assert len(narrowings) > 0.5 * checked and found > 40


@pytest.mark.parametrize("text_token_us", [0.0, 1e9])
def test_few_phrase_candidates_give_the_same_chunks_whichever_check_is_cheaper(
    index, monkeypatch, text_token_us
):
    """A few candidates go to the cheaper check: their re-analysed text, or the stored positions
    (kenning.lexical.view.LexicalView._positions_cheaper_than_text). Priced so that text always
    wins, and so that positions always win, the chunks found are the full check's."""
    import kenning.lexical.view as lexical

    rng = random.Random(17)
    monkeypatch.setattr(lexical, "TEXT_TOKEN_US", text_token_us)
    narrowings = _count_calls(monkeypatch, "_sub_phrase_docs")
    text_checks = _count_calls(monkeypatch, "_phrase_in_text")
    with index.store.reading():
        view = index.lexical.view()
        rows = list(index.store.chunks_by_ids(list(range(1, 400))).values())
        checked = 0
        for phrase, spec, distinct in _cut_phrases(index, rows[:80], rng, lambda: 4):
            expected = view._phrase_by_positions(spec, view.live, None)
            view.cache.drop(lambda key: False)
            candidates = _holding_all(view, view.postings(distinct[:-1]), distinct[:-1])
            if not candidates or len(candidates) > lexical.PHRASE_TEXT_CHECK:
                continue
            assert view.phrase_docs(spec, view.live, None) == expected, phrase
            checked += 1
    assert checked > 20
    if text_token_us:
        assert text_checks == []  # every few-candidate check went by positions
    else:
        assert narrowings == [] and len(text_checks) == checked


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_where_some_postings_positions_begin_is_the_frequencies_before_them(data):
    """The phrase check reads a few chunks' slices of a term's positions: each begins after the term
    frequencies of every posting before it, summed by runs (the first posting among them or not)."""
    import numpy as np

    from kenning.lexical.view import _starts_at

    tf = np.array(data.draw(st.lists(st.integers(0, 70_000 // 50), min_size=1, max_size=50)), dtype=np.uint16)
    at = np.array(sorted(data.draw(st.sets(st.integers(0, len(tf) - 1), min_size=1))), dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(tf.astype(np.int64))))
    assert _starts_at(tf, at).tolist() == before[at].tolist()


@pytest.mark.parametrize("way", ["text", "every word's positions", "the rarest two's positions, then text"])
def test_few_candidates_of_words_all_read_give_the_same_chunks_whichever_way(index, monkeypatch, way):
    """With every word's postings read (a verbatim check after gathering), a few candidates are
    checked the cheapest way: by their text; by every word's stored positions (a small collection's
    common words, or positions already read); or narrowed first by the two rarest words' positions,
    then by their text. The chunks found are the full positions check's whichever way (random
    four-word phrases cut from the corpus, and the same phrases with a word swapped, which most
    candidates fail)."""
    import kenning.lexical.view as lexical

    rng = random.Random(23)
    monkeypatch.setattr(lexical, "TEXT_TOKEN_US", 0.0 if way == "text" else 1e9)
    if way.startswith("the rarest two"):  # every word's positions priced above the text
        monkeypatch.setattr(lexical.LexicalView, "_positions_cheaper_than_text", lambda *a: False)
    narrowings = _count_calls(monkeypatch, "_sub_phrase_docs")
    text_checks = _count_calls(monkeypatch, "_phrase_in_text")
    with index.store.reading():
        view = index.lexical.view()
        rows = list(index.store.chunks_by_ids(list(range(1, 400))).values())
        checked = found = 0
        for phrase, spec, distinct in _cut_phrases(index, rows[:120], rng, lambda: 4, swap=True):
            expected = view._phrase_by_positions(spec, view.live, None)
            candidates = _holding_all(view, view.postings(distinct), distinct)
            if not candidates or len(candidates) > lexical.PHRASE_TEXT_CHECK:
                continue
            assert view.phrase_docs(spec, view.live, None) == expected, phrase
            checked += 1
            found += len(expected) > 0
    assert checked > 20 and 0 < found < checked
    if way == "text":
        assert narrowings == [] and len(text_checks) == checked
    elif way == "every word's positions":
        assert narrowings == [] and text_checks == []
    else:  # narrowed by the rarest two; the text settles only the candidates they leave
        assert len(narrowings) == checked and 0 < len(text_checks) < checked
