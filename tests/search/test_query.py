"""The query dialect: parsing, each construct's semantics, malformed input, and a property test."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kenning import Index
from kenning.query.parser import Phrase, Word, parse_query

# ------------------------------------------------------------------------------------------ parsing


def test_plain_words_are_soft_clauses():
    q = parse_query("wing slipstream lift")
    assert [c.kind for c in q.clauses] == ["plain"] * 3 and not q.exclusions and q.is_plain


def test_each_construct():
    q = parse_query('+jwt "rotation policy" -session -"session cookie" auth OR login title:keys body:"a b"')
    kinds = [(c.kind, c.required, [a.describe() for a in c.alternatives]) for c in q.clauses]
    assert kinds == [
        ("required", True, ["jwt"]),
        ("phrase", True, ['"rotation policy"']),
        ("or", False, ["auth", "login"]),
        ("field", True, ["title:keys"]),
        ("field", True, ['body:"a b"']),
    ]
    assert [e.describe() for e in q.exclusions] == ["session", '"session cookie"']
    assert (
        q.describe()
        == '+jwt "rotation policy" auth OR login title:keys body:"a b" -session -"session cookie"'
    )


def test_strict_makes_plain_words_required():
    q = parse_query("alpha beta", strict=True)
    assert all(c.required and c.kind == "required" for c in q.clauses)


def test_or_chain_and_lowercase_or():
    q = parse_query("a OR b OR c d or e")
    assert [len(c.alternatives) for c in q.clauses] == [3, 1, 1, 1]  # lowercase "or" is a word


def test_parentheses_are_plain_text_even_beside_operators():
    q = parse_query("(auth OR login) -session")
    assert q.describe() == "auth OR login -session" and not q.notices
    q = parse_query('flow "wind tunnel" (made)')
    assert q.describe() == 'flow "wind tunnel" made'
    q = parse_query("What articles deal with TSS (Time Sharing System), an operating system?")
    assert "TSS" in q.plain_words and "Time" in q.plain_words and "System)," not in q.plain_words


def test_operators_apply_only_where_unambiguous():
    q = parse_query("-Dantès father -5 degrees e-mail fault-tolerance --strict")
    assert [e.describe() for e in q.exclusions] == ["Dantès"]
    assert q.plain_words == ["father", "-5", "degrees", "e-mail", "fault-tolerance", "--strict"]
    q = parse_query("note: foo:bar title:keys Title:Keys")
    assert [c.kind for c in q.clauses] == ["plain", "plain", "field", "field"]
    assert q.clauses[1].alternatives[0].text == "foo:bar"  # an unknown field is just words
    q = parse_query("+5 +jwt")
    assert [c.kind for c in q.clauses] == ["plain", "required"]


def test_plain_syntax_reads_every_word_as_a_word():
    q = parse_query('+jwt "rotation policy" -session OR title:keys (x)', syntax="plain")
    assert q.is_plain and q.plain_words == [
        "+jwt",
        '"rotation',
        'policy"',
        "-session",
        "OR",
        "title:keys",
        "x",
    ]
    with pytest.raises(ValueError):
        parse_query("x", syntax="nope")


def test_parentheses_in_plain_text_are_punctuation():
    q = parse_query("stability measurements (made using free-flight models) compare")
    assert [c.alternatives[0].text for c in q.clauses] == [
        "stability",
        "measurements",
        "made",
        "using",
        "free-flight",
        "models",
        "compare",
    ]


@pytest.mark.parametrize(
    "text, notice",
    [
        ('"unclosed phrase here', "unmatched quote at position 0"),
        ("alpha - beta", "lone '-' at position 6"),
        ("alpha + beta", "lone '+' at position 6"),
        ("OR alpha", "nothing to join before it"),
        ("alpha OR", "nothing to join after it"),
        ("alpha OR -beta", "an exclusion cannot be an alternative"),
        ("title: alpha", "nothing follows the field name"),
        ("-alpha -beta", "only excludes"),
    ],
)
def test_documented_best_readings(text, notice):
    q = parse_query(text)
    assert any(notice in n for n in q.notices), q.notices


def test_unmatched_quote_is_a_plain_character():
    q = parse_query('alpha "beta gamma')
    assert q.plain_words == ["alpha", "beta", "gamma"]
    q = parse_query('say "exact words" and "more')
    assert (
        isinstance(q.clauses[1].alternatives[0], Phrase)
        and q.clauses[1].alternatives[0].text == "exact words"
    )
    assert q.plain_words == ["say", "and", "more"]


def test_operators_as_literals_and_punctuation_are_ignored():
    q = parse_query("&& || ! alpha ?")
    assert [c.alternatives[0].text for c in q.clauses] == ["alpha"]
    assert parse_query("!" * 10_000).clauses == []
    assert parse_query("a\x00b\x1fc\x7f").plain_words == ["a", "b", "c"]


def test_very_long_query_is_cut_with_notice():
    q = parse_query("word " * 5000)
    assert any("cut to its first" in n for n in q.notices)


# ------------------------------------------------------------------------------------------ semantics

DOCS = [
    ("d1", "Tokens", "We rotate the JWT signing keys every month. The quick brown fox."),
    ("d2", "Sessions", "Session data expires after an hour. Brown quick fox jumps."),
    ("d3", "Login", "The login page calls parseQueryString on every request."),
    ("d4", "Rotation policy", "Keys follow the rotation policy; session cookie rotation is separate."),
    ("d5", "Misc", "Nothing relevant here except a lonely fox."),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("dialect")
    corpus = root / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"_id": i, "title": t, "text": b}) for i, t, b in DOCS))
    ix = Index(root / "ix")
    ix.add([corpus])
    yield ix
    ix.close()


def keys(ix, query, **kw):
    """The documents of the results that meet every constraint (relaxed results are left out)."""
    return {h.doc_key for h in ix.search(query, limit=50, **kw).hits if not h.relaxed}


def test_phrase_requires_adjacency(index):
    assert keys(index, '"quick brown"') == {"d1"}
    assert keys(index, '"brown quick"') == {"d2"}
    assert keys(index, "quick brown") == {"d1", "d2"}


def test_phrase_inside_identifier(index):
    assert keys(index, '"query string"') == {"d3"}
    assert keys(index, '"calls parseQueryString on"') == {"d3"}


def test_required_and_excluded(index):
    assert keys(index, "+fox rotate") == {"d1", "d2", "d5"}
    assert keys(index, "fox -brown") == {"d5"}
    assert keys(index, 'session -"session cookie"') == {"d2"}


def test_or_group(index):
    assert keys(index, "+jwt OR login") == {"d1", "d3"}
    response = index.search("jwt OR login fox", limit=10, explain=True)
    top = response.hits[0].explain["lexical"]
    assert top["clauses"] == 2  # the OR group counts once for coordination


def test_field_restriction(index):
    assert keys(index, "title:rotation") == {"d4"}
    assert keys(index, "body:rotation") == {"d1", "d4"}  # stemming: "rotate" in d1
    assert keys(index, "title:tokens") == {"d1"}
    assert keys(index, "title:fox") == set()


def test_strict_mode(index):
    assert keys(index, "quick fox jumps", strict=True) == {"d2"}
    assert keys(index, "quick fox jumps") == {"d1", "d2", "d5"}


def test_empty_result_says_why(index):
    response = index.search("+kubernetes fox", limit=5, relax=False)
    assert response.hits == [] and "+kubernetes has no postings" in response.empty_reason
    response = index.search("fox -fox", limit=5, relax=False)
    assert "nothing left after -fox" in response.empty_reason
    assert "only excludes" in index.search("-fox", limit=5).empty_reason
    response = index.search("kubernetes zzzz", limit=5)  # words that occur nowhere: an honest not-found
    assert (
        response.hits == []
        and response.relaxed == []
        and "no indexed chunk contains" in response.empty_reason
    )


def test_a_constraint_that_leaves_nothing_is_named_and_relaxed(index):
    response = index.search('"brown rotation" keys', limit=5)
    assert response.relaxed == [{"constraint": '"brown rotation"', "kind": "required", "strict_results": 0}]
    assert any('no chunk holds "brown rotation"' in n.text for n in response.notices), response.notices
    assert response.hits and all(h.relaxed == ['"brown rotation"'] for h in response.hits)
    assert {h.doc_key for h in response.hits} >= {"d1", "d4"}  # the words still score
    data = response.to_dict()
    assert data["relaxed"][0]["constraint"] == '"brown rotation"' and data["hits"][0]["relaxed"]
    # two constraints that each hold somewhere but never together: the one to blame is set aside
    response = index.search('"quick brown" +session', limit=5)
    assert response.relaxed[0]["constraint"] == '"quick brown"'
    assert any('no result meets "quick brown" together with the rest' in n.text for n in response.notices)
    assert {h.doc_key for h in response.hits} == {"d2", "d4"}
    # a required word that nothing holds: said plainly, the rest still searched
    response = index.search("+kubernetes fox", limit=5)
    assert {h.doc_key for h in response.hits} == {"d1", "d2", "d5"}
    assert any("no chunk holds +kubernetes" in n.text for n in response.notices)


def test_almost_nothing_keeps_the_strict_results_first(index):
    response = index.search('"quick brown" fox', limit=5)
    assert response.hits[0].doc_key == "d1" and response.hits[0].relaxed == []
    assert [h.relaxed for h in response.hits[1:]] and all(h.relaxed for h in response.hits[1:])
    assert any("only 1 result(s) meet" in n.text for n in response.notices)
    # with a limit of one, one strict result is enough
    assert index.search('"quick brown" fox', limit=1).relaxed == []


def test_exclusions_are_relaxed_only_when_nothing_is_left(index):
    response = index.search("fox -brown", limit=5)  # d5 is left: the exclusion holds
    assert response.relaxed == [] and {h.doc_key for h in response.hits} == {"d5"}
    response = index.search("fox -fox", limit=5)
    assert response.relaxed and response.relaxed[0]["kind"] == "exclude"
    assert all(h.relaxed == ["-fox"] for h in response.hits)


def test_plain_queries_rank_exactly_as_plain_bm25(index):
    """A plain query and the same words forced through the dialect as an OR-free soft query agree."""
    plain = index.search("rotate keys session", limit=10)
    assert [h.doc_key for h in plain.hits]
    assert all(c.kind == "plain" for c in plain.plan.clauses)
    explained = index.search("rotate keys session", limit=10, explain=True)
    assert [(h.id, h.score) for h in plain.hits] == [(h.id, h.score) for h in explained.hits]


def test_parsed_query_is_in_json_and_explain(index):
    data = index.search('+fox "quick brown"', limit=3, relax=False).to_dict()
    assert data["plan"]["read_as"] == '+fox "quick brown"'
    assert [c["kind"] for c in data["plan"]["clauses"]] == ["required", "phrase"]


# ------------------------------------------------------------------------------------------ property

VOCAB = ["quick", "brown", "fox", "session", "cookie", "keys", "rotation", "login", "jwt", "zzz"]
PIECES = st.sampled_from(
    VOCAB + ["OR", "+", "-", '"', "title:", "body:", "(", ")", "&&", "!", " ", "\x00", "é"]
)


def oracle_ok(ix, response) -> bool:
    """Check every hit against the parsed constraints by re-reading its raw text."""
    analyzer = ix.analyzer
    for hit in response.hits:
        row = ix.store.chunks_by_ids([hit.id])[hit.id]
        fields = {"title": analyzer.positioned_terms(row.title), "body": analyzer.positioned_terms(row.body)}

        def item_matches(item, fields=fields):
            planned = [(t, o) for t, o in item.spec]
            wanted = [item.item.field] if item.item.field else ["title", "body"]
            for f in wanted:
                terms, positions = fields[f]
                at = {}
                for t, p in zip(terms, positions, strict=True):
                    at.setdefault(t, set()).add(p)
                starts = None
                for t, o in planned:
                    here = {p - o for p in at.get(t, ())}
                    starts = here if starts is None else starts & here
                if starts:
                    return True
            return False

        for clause in response.plan.clauses:
            if clause.required and not any(item_matches(i) for i in clause.items):
                return False
        for item in response.plan.exclusions:
            if item_matches(item):
                return False
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(PIECES, max_size=12).map(" ".join) | st.text(max_size=60))
def test_any_string_gets_a_plan_and_results_obey_it(index, text):
    parsed = parse_query(text)  # never raises
    response = index.search(parsed, limit=10)
    strict = [h for h in response.hits if not h.relaxed]
    response.hits = strict
    assert oracle_ok(index, response) or response.relaxed, (text, response.plan.to_dict())
    if not response.relaxed:
        assert oracle_ok(index, response), (text, response.plan.to_dict())
    for word in (c.alternatives[0] for c in parsed.clauses if c.kind == "plain"):
        assert isinstance(word, Word)
    plain = index.search(text, limit=10, syntax="plain")
    assert plain.plan.parsed.is_plain


OPERATOR_SOUP = st.lists(
    st.sampled_from(list("\"+-():() ORtitlebody\t\n\x00é漢字🙂'’“”.,;!?*&|^~`\\/") + ["OR", "AND", "title:"]),
    max_size=40,
).map("".join)


@settings(max_examples=2000, deadline=None)
@given(OPERATOR_SOUP | st.text(max_size=200))
def test_the_parser_never_raises_and_always_returns_a_plan(text):
    for syntax in ("dialect", "plain"):
        for strict in (False, True):
            parsed = parse_query(text, strict=strict, syntax=syntax)
            assert isinstance(parsed.describe(), str) and isinstance(parsed.to_dict(), dict)
            for clause in parsed.clauses:
                assert clause.alternatives and all(a.text for a in clause.alternatives)


WORDS_AND_ORS = st.lists(
    st.sampled_from(list("()ORtitlebody\t\n\x00é漢字🙂'’“”.,;!?*&|^~`\\/ ") + ["OR", "AND", "word", "  "]),
    max_size=40,
).map("".join)


@settings(max_examples=2000, deadline=None)
@given(WORDS_AND_ORS | OPERATOR_SOUP | st.text(max_size=200))
def test_the_parsers_shortcuts_read_a_query_as_its_general_path_does(text):
    """A query without a quote, sign or colon is split by one regular expression, and one of words
    alone becomes a clause a word: the same tokens, clauses and notices as the character scan and the
    grouping of every token give."""
    from kenning.query import parser

    q = parser._clean(text)
    notices: list[str] = []
    tokens = parser._tokens(q, notices)
    scanned_notices: list[str] = []
    assert tokens == parser._scan_tokens(q, scanned_notices) and notices == scanned_notices
    for strict in (False, True):
        grouped = parser.ParsedQuery(text=text, strict=strict)
        parser._grouped_clauses(q, tokens, strict, grouped)
        if all(t.kind == "word" and t.sign is None and t.field is None for t in tokens):
            assert parser._word_clauses(q, tokens, strict) == grouped.clauses
            assert not grouped.exclusions and not grouped.notices
        assert parse_query(text, strict).clauses == grouped.clauses


# ------------------------------------------------------------------------------------------ glossary


def test_glossary_lifecycle_through_search(tmp_path):
    """suggest -> pending -> approve -> expansion -> match reasons, and reject keeps it out."""
    (tmp_path / "a.md").write_text("# Auth\n\nRequests carry a JSON Web Token (JWT) in a header.\n")
    (tmp_path / "b.md").write_text("# Tokens\n\nEvery JSON Web Token expires after an hour.\n")
    (tmp_path / "c.md").write_text("# Keys\n\nThe JWT signing keys rotate monthly.\n")
    ix = Index(tmp_path / "ix")
    ix.add([tmp_path])
    assert keys(ix, "jwt") == {str(tmp_path / "a.md"), str(tmp_path / "c.md")}
    proposed = ix.glossary.suggest()
    assert any({p["term"], p["canonical"]} == {"JWT", "JSON Web Token"} for p in proposed), proposed
    assert any(p["term"] in ("JWT", "JSON Web Token") for p in ix.glossary.pending())
    ix.glossary.approve("JWT")

    response = ix.search("jwt expires")
    assert {h.doc_key for h in response.hits} == {str(tmp_path / n) for n in ("a.md", "b.md", "c.md")}
    b = next(h for h in response.hits if h.doc_key.endswith("b.md"))
    assert {
        "clause": "jwt (glossary)",
        "matched": '"JSON Web Token"',
        "via_glossary": "JSON Web Token",
        "glossary_group": "JSON Web Token",
        "fields": ["body"],
    } in b.match_reasons
    assert response.plan.expansions[0]["alternatives"] == ["JSON Web Token"]
    # phrases and exclusions are literal: no expansion there
    assert keys(ix, '"jwt"') == {str(tmp_path / "a.md"), str(tmp_path / "c.md")}
    assert keys(ix, "header OR expires -jwt") == {str(tmp_path / "b.md")}  # the exclusion is not expanded
    assert keys(ix, "expires -jwt") == {str(tmp_path / "b.md")}
    ix.glossary.reject("JWT")
    assert keys(ix, "jwt") == {str(tmp_path / "a.md"), str(tmp_path / "c.md")}
    assert not any(p["term"] == "JWT" for p in ix.glossary.suggest())  # rejected: never proposed again
