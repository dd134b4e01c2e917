"""The analyzer: folding, stemming switch, identifier parts, CJK, and query-side stopwords."""

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from kenning.analysis.analyzer import TOKEN_RE, Analyzer, AnalyzerConfig, fold, identifier_parts, raw_tokens


def test_accent_and_case_folding():
    assert fold("Dantès") == "dantes"
    assert fold("MERCÉDÈS") == "mercedes"
    assert fold("ﬁnal") == "final"
    a = Analyzer()
    assert a.terms("Dantès") == a.terms("dantes")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=20))
def test_an_ascii_token_folds_as_the_full_normalisation_folds_it(token):
    """fold() gives ASCII its lower case without normalising: the same as casefold, NFKD, stripping
    combining marks and NFC give."""
    full = unicodedata.normalize("NFC", unicodedata.normalize("NFKD", token.casefold()))
    assert fold(token) == full


def test_stemming_is_switchable():
    assert Analyzer().terms("running databases") == ["run", "databas"]
    assert Analyzer(AnalyzerConfig(stem=False)).terms("running databases") == ["running", "databases"]


def test_identifiers_are_indexed_whole_and_in_parts():
    assert identifier_parts("parseQueryString") == ["parse", "Query", "String"]
    assert identifier_parts("snake_case_name") == ["snake", "case", "name"]
    assert identifier_parts("HTTPServer") == ["HTTP", "Server"]
    assert identifier_parts("plain") == []
    terms = Analyzer(AnalyzerConfig(stem=False)).terms("parseQueryString")
    assert terms == ["parsequerystring", "parse", "query", "string"]


def test_cjk_runs_become_bigrams():
    assert Analyzer().terms("東京都庁") == ["東京", "京都", "都庁"]


def test_query_stopwords_removed_with_fallback():
    a = Analyzer()
    assert a.query_terms("how does Dantès know Mercédès") == ["dant", "know", "merced"]
    assert a.query_terms("how are you") == ["how", "are", "you"]  # all stopwords: keep them
    assert a.query_terms("the the apple apple") == ["appl"]  # distinct, in order
    assert a.query_terms("") == []


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(alphabet=st.characters(max_codepoint=127)),  # ASCII: the fast pattern
        st.text(alphabet=st.sampled_from("ab_Z9 -'.\u00e9e\u0301\u00b2\u2019\u6771\u0660\u00aa\ufb01\t\n")),
        st.text(),
    )
)
def test_raw_tokens_are_the_token_pattern_over_nfc_text(text):
    """ASCII text takes a simpler pattern and no normalising; every text gets the same tokens as the
    Unicode pattern over its NFC form (underscores, digits, combining accents, superscripts and
    other non-ASCII word characters included)."""
    assert raw_tokens(text) == TOKEN_RE.findall(unicodedata.normalize("NFC", text))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.sampled_from("abzAZ09_\u00e9\u6771"), min_size=1, max_size=8),
            st.sampled_from(["The", "running", "Runs", "1990", "x86", "parseQuery", "HTTPServer", "A", "aB"]),
        ),
        max_size=30,
    ),
    st.booleans(),
)
def test_plain_words_get_the_one_term_token_analysis_gives_them(tokens, stem):
    """The segment builder learns new words in bulk (plain_word_terms); each plain word's term is the
    one token_analysis gives it, and every token is either plain or handed back."""
    raws = [r for r in dict.fromkeys(t for token in tokens for t in raw_tokens(token))]
    analyzer = Analyzer(AnalyzerConfig(stem=stem))
    plain, terms, other = analyzer.plain_word_terms(raws)
    assert sorted(plain + other) == sorted(raws)
    for raw, term in zip(plain, terms, strict=True):
        assert Analyzer(AnalyzerConfig(stem=stem)).token_analysis(raw) == ((term,), (0,), 1)
    assert {"The", "running", "Runs", "1990", "x86", "A"} & set(raws) <= set(plain)
    # again, partly from the terms the analyzer kept: the same terms
    words = raws[::-1] + ["Unseen", "words2"]
    again, again_terms, _ = analyzer.plain_word_terms(words)
    assert dict(zip(again, again_terms, strict=True)) == {
        raw: Analyzer(AnalyzerConfig(stem=stem)).token_analysis(raw)[0][0] for raw in again
    }
    assert not {"parseQuery", "HTTPServer", "aB"} & set(plain)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.one_of(
            st.text(alphabet=st.sampled_from("abzAZ09_\u00e9\u0131\ufb01"), min_size=1, max_size=8),
            st.sampled_from(["The", "Harbour", "harbour", "HTML", "parseQuery", "HTTPServer", "aB", "Ab"]),
        ),
        st.integers(-3, 3),
        max_size=30,
    )
)
def test_vocabulary_counts_take_plain_words_as_their_lowercase_and_fold_the_rest(raw_counts):
    """The spelling vocabulary's bulk count: the same words and counts as folding and splitting each
    raw token (`vocabulary_words`), plain ASCII words by a shortcut."""
    from collections import Counter

    analyzer = Analyzer()
    expected = Counter()
    for raw, n in raw_counts.items():
        for word in Analyzer().vocabulary_words((raw,)):
            expected[word] += n
    got = analyzer.vocabulary_counts(raw_counts)
    assert {w: n for w, n in got.items() if n} == {w: n for w, n in expected.items() if n}
