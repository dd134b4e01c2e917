"""The segment's raw-token table: the compiled one against the one in Python, and both against the
analyzer's tokens (kenning.analysis.analyzer.raw_tokens)."""

import shutil
import sysconfig
import unicodedata
from array import array
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kenning.analysis.analyzer import TOKEN_RE, Analyzer, raw_tokens
from kenning.indexing import segments, term_table
from kenning.indexing.term_table import SEVERAL, PythonTermTable, TermTable

TABLES = [PythonTermTable] + ([TermTable] if term_table.NATIVE else [])


def no_new_words(new):  # `learn` for a scan whose every word is known
    raise AssertionError(f"scan asked to learn {new}")


# letters, digits, underscores, spaces and punctuation, accents (combining and precomposed), CJK,
# wide characters beyond the BMP, and characters whose kind differs from their neighbours'
WIDE = ["é", "e\u0301", "ß", "ﬁ", "Ω", "東", "京", "\U0001d400", "\U0001f600", "ı", "\u00a0"]
ALPHABET = st.sampled_from(list("aAzZ09_ -.,'\n\t") + WIDE)
TEXTS = st.lists(ALPHABET, max_size=40).map("".join)


def test_the_compiled_table_is_built_where_a_compiler_is():
    """kenning's install compiles it (setup.py, optional); a machine with a C compiler and Python's
    headers that still runs the Python table has lost the build silently. Without them the Python
    table stands in, and this says so instead of passing."""
    can_compile = shutil.which("cc") or shutil.which("gcc")
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not (can_compile and headers.exists()):
        pytest.skip("no C compiler or Python headers here: indexing runs the Python term table")
    assert term_table.NATIVE, "a compiler is here but kenning.indexing._term_table was not built"
    assert TermTable.__module__ == "kenning.indexing._term_table"


@pytest.mark.parametrize("table_type", TABLES)
@settings(max_examples=300, deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=5))
def test_a_scan_reads_the_analyzers_tokens(table_type, texts):
    """Each text's ids are its raw tokens' ids in order; the tokens new to the table go to `learn`
    each once, in order, and each text is counted once a token."""
    table, ids, taught = table_type(), {}, []

    def learn(new):
        taught.append(list(new))
        for token in new:
            ids[token] = len(ids)
        table.learn(new, [ids[t] for t in new])

    counts = Counter()
    for chunk_id, text in enumerate(texts, 1):
        text = unicodedata.normalize("NFC", text)
        tokens = raw_tokens(text)
        assert tokens == TOKEN_RE.findall(text)
        new = [t for t in dict.fromkeys(tokens) if t not in ids]
        got = table.scan(text, chunk_id, learn)
        assert taught.pop() == new if new else not taught
        assert got == array("I", [ids[t] for t in tokens]).tobytes()
        counts.update(set(tokens))
    assert len(table) == len(ids)
    assert all(table.get(t) == i for t, i in ids.items())
    assert table.chunk_counts() == dict(counts)


@pytest.mark.parametrize("table_type", TABLES)
def test_a_scan_of_more_new_words_than_the_table_holds_grows_it_and_keeps_every_id(table_type):
    """60,000 new words in one text: the compiled table grows while it reads them (its slots move)
    and again while they are learned; every place is filled with its word's id all the same."""
    words = [f"w{n}x" for n in range(60_000)]
    table = table_type()
    ids = {}

    def learn(new):
        for token in new:
            ids[token] = len(ids)
        table.learn(new, [ids[t] for t in new])

    text = " ".join(words + words[::7])
    got = table.scan(text, 1, learn)
    assert got == array("I", [ids[t] for t in words + words[::7]]).tobytes()
    assert len(table) == 60_000 and table.chunk_counts()["w7x"] == 1


@pytest.mark.parametrize("table_type", TABLES)
def test_a_scan_whose_learn_leaves_a_token_without_a_term_fails(table_type):
    table = table_type()
    with pytest.raises(ValueError, match="other"):
        table.scan("known other", 1, lambda new: table.learn(["known"], [0]))


@pytest.mark.parametrize("table_type", TABLES)
@settings(max_examples=200, deadline=None)
@given(
    added=st.lists(st.dictionaries(TEXTS.filter(bool), st.integers(-3, 5), max_size=5), max_size=3),
    removed=st.lists(TEXTS, max_size=6),
)
def test_a_runs_changes_are_chunks_added_less_chunks_removed(table_type, added, removed):
    """`RawCountChanges` (a run's spelling vocabulary changes), on either table: the counts handed on
    by the analysis, less each raw token of each removed NFC text once; none at 0; `take` starts over."""
    saved = term_table.TermTable
    term_table.TermTable = table_type
    try:
        changes = term_table.RawCountChanges()
        for counts in added:
            changes.add(counts)
        changes.remove(removed)
        got = changes.take()
        again = changes.take()
    finally:
        term_table.TermTable = saved
    expected = Counter()
    for counts in added:
        expected.update(counts)
    for text in removed:
        expected.subtract(set(TOKEN_RE.findall(unicodedata.normalize("NFC", text))))
    assert got == {raw: n for raw, n in expected.items() if n}
    assert again == {}


@pytest.mark.parametrize("table_type", TABLES)
def test_tokens_with_several_terms_send_the_text_to_the_slow_path(table_type):
    table, taught = table_type(), []

    def learn(new):
        taught.append(new)
        table.learn(new, [0, SEVERAL])

    text = "parse parseQueryString"
    assert table.scan(text, 1, learn) is None
    assert taught == [["parse", "parseQueryString"]]
    assert table.get("parse") == 0 and table.get("parseQueryString") is None and table.get("other") is None
    assert table.chunk_counts() == {"parse": 1, "parseQueryString": 1}  # counted as it was read
    table.count(raw_tokens(text), 1)  # the slow path's count of the same chunk adds nothing
    assert table.chunk_counts() == {"parse": 1, "parseQueryString": 1}


@pytest.mark.parametrize("table_type", TABLES)
def test_a_token_counts_each_chunk_once_whichever_field_or_path(table_type):
    table = table_type()
    table.learn(["a", "b", "c"], [0, 1, 2])
    assert table.scan("a b a", 1, no_new_words) == array("I", [0, 1, 0]).tobytes()
    assert table.scan("a c", 1, no_new_words) == array("I", [0, 2]).tobytes()  # the same chunk's body
    table.count(["a", "c"], 1)
    table.scan("b", 2, no_new_words)
    table.count(["c"], 3)
    assert table.chunk_counts() == {"a": 1, "b": 2, "c": 2}
    table.count(["a"], 0)  # any id a segment holds, 0 and the largest too
    table.scan("a", 0xFFFFFFFF, no_new_words)
    assert table.chunk_counts()["a"] == 3
    with pytest.raises(OverflowError):
        table.count(["a"], 1 << 32)


@pytest.mark.parametrize("table_type", TABLES)
def test_a_token_in_a_wide_string_is_the_same_token_in_a_narrow_one(table_type):
    table, taught = table_type(), []

    def learn(new):
        taught.append(new)
        table.learn(new, [0, 1])

    # an emoji is not a word character
    assert table.scan("café \U0001f600 東京", 1, learn) == array("I", [0, 1]).tobytes()
    assert taught == [["café", "東京"]]
    assert table.scan("café", 2, no_new_words) == array("I", [0]).tobytes()
    assert table.scan("東京 café", 3, no_new_words) == array("I", [1, 0]).tobytes()
    assert table.chunk_counts() == {"café": 3, "東京": 2}


def test_learn_refuses_what_is_not_a_table_entry():
    for table_type in TABLES:
        table = table_type()
        with pytest.raises(ValueError):
            table.learn(["a", "b"], [0])
    if term_table.NATIVE:
        with pytest.raises(ValueError):
            TermTable().learn(["a"], [-5])
        with pytest.raises(TypeError):
            TermTable().learn([b"a"], [0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(TEXTS, TEXTS), min_size=1, max_size=6))
def test_a_segment_is_the_same_from_either_table(chunks):
    """Rows and raw-token counts of a segment built with the compiled table and with the Python one;
    the counts are Counter(set of each chunk's raw tokens), as the spelling vocabulary takes them."""
    expected_counts = Counter()
    for title, body in chunks:
        expected_counts.update(set(raw_tokens(title)) | set(raw_tokens(body)))
    results = []
    for table_type in TABLES:
        builder = segments.SegmentBuilder(Analyzer())
        builder.table = table_type()
        for chunk_id, (title, body) in enumerate(chunks, 1):
            builder.add(chunk_id, title, body)
        assert builder.raw_chunk_counts() == {k: v for k, v in expected_counts.items()}
        rows = [(t, *(list(map(int, part)) for part in rest)) for t, *rest in builder.rows()]
        results.append(rows)
    assert all(r == results[0] for r in results)
