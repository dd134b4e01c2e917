"""The analyzer: folding, stemming switch, identifier parts, CJK, and query-side stopwords."""

from kenning.analysis.analyzer import Analyzer, AnalyzerConfig, fold, identifier_parts


def test_accent_and_case_folding():
    assert fold("Dantès") == "dantes"
    assert fold("MERCÉDÈS") == "mercedes"
    assert fold("ﬁnal") == "final"
    a = Analyzer()
    assert a.terms("Dantès") == a.terms("dantes")


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
