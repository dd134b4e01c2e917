"""Spelling corrections: exact edit distances, and a candidate filter that never loses the answer."""

from hypothesis import given, settings
from hypothesis import strategies as st

from kenning.analysis.analyzer import fold
from kenning.query.spelling import Speller, edit_distance


def test_edit_distance_counts_each_kind_of_edit_once():
    assert edit_distance("garlic", "garlic", 2) == 0
    assert edit_distance("garlic", "garlik", 2) == 1  # substitution
    assert edit_distance("garlic", "garlics", 2) == 1  # insertion
    assert edit_distance("garlic", "garic", 2) == 1  # deletion
    assert edit_distance("garlic", "gralic", 2) == 1  # adjacent transposition
    assert edit_distance("kitten", "sitting", 3) == 3
    assert edit_distance("kitten", "sitting", 2) == 3  # stops early: limit + 1


def test_corrections_prefer_fewer_edits_then_frequency():
    speller = Speller({"prison": 40, "prism": 90, "poison": 5, "and": 900})
    assert speller.correct("prisonn") == "prison"  # 1 edit beats the more frequent 2-edit "prism"
    assert speller.correct("pison") == "prison"  # two at 1 edit: the more frequent wins
    assert speller.correct("adn") == "and"
    assert speller.correct("prison") is None  # known words are left alone
    assert speller.correct("zzz") is None
    assert Speller({"ab": 1}).correct("abcd") is None  # words of up to 4 letters allow one edit


def _reference(word: str, vocabulary: dict[str, int]) -> str | None:
    """The specification by brute force: every vocabulary word's exact distance."""
    word = fold(word)
    if word in vocabulary:
        return None
    limit = 1 if len(word) <= 4 else 2
    scored = [(edit_distance(word, w, 10), -n, w) for w, n in vocabulary.items()]
    scored = [s for s in scored if s[0] <= limit]
    return min(scored)[2] if scored else None


folded_words = st.text(alphabet="abcdefgh", min_size=1, max_size=9)  # the vocabulary holds folded words
query_words = st.text(alphabet="abcdeèfgh", min_size=1, max_size=9)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(folded_words, st.integers(1, 5), min_size=1, max_size=40), query_words)
def test_filtered_search_equals_brute_force(vocabulary, word):
    assert Speller(vocabulary).correct(word) == _reference(word, vocabulary)


def test_a_runs_vocabulary_changes_count_each_removed_chunk_once_per_word():
    """Added raw counts minus, per removed chunk, each distinct token once (a chunk saying `the`
    twice is one chunk), folded to the vocabulary's words (a chunk with both `The` and `the` counts
    twice, which is fine for ranking corrections)."""
    from collections import Counter

    from kenning.analysis.analyzer import TOKEN_RE, Analyzer
    from kenning.indexing.term_table import RawCountChanges

    analyzer = Analyzer()
    added = Counter({"Harbour": 3, "harbour": 1, "castle": 2, "parseQuery": 1})
    removed = ["the harbour the harbour castle", "Harbour lights", "parseQuery parse query", "castle"]
    expected_raws = Counter(added)
    for text in removed:
        for raw in set(TOKEN_RE.findall(text)):
            expected_raws[raw] -= 1
    expected = Counter()
    for raw, n in expected_raws.items():
        for word in analyzer.vocabulary_words((raw,)):
            expected[word] += n
    changes = RawCountChanges()
    changes.add(dict(added))
    changes.remove(removed)
    delta = analyzer.vocabulary_counts(changes.take())
    assert +delta == +expected and -delta == -expected
    assert delta["harbour"] == 3 + 1 - 1 - 1 and delta["castle"] == 0 and delta["lights"] == -1
