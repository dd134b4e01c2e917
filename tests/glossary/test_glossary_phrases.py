"""Glossary terms of several words typed without quotes: the parser reads "content type" as one word
and the plan finds its group, longest term first; quotes and negations stay literal; the match
reasons and --explain name the group on every surface."""

import pytest

from kenning.api.index import Index
from kenning.query.filters import Filters
from kenning.query.parser import Word, parse_query

DOCS = {
    "mime.md": "# MIME\n\nThe mime database maps every file to a mime name.\n",
    "media.md": "# Media\n\nEvery media type has a subtype and optional parameters.\n",
    "header.md": "# Headers\n\nThe content type header says what the body of a response is.\n",
    "sniff.md": "# Sniffing\n\nReading the content of a file tells little; its type is guessed.\n",
    "cookie.md": "# Cookies\n\nA session cookie keeps the user signed in between two requests.\n",
    "login.md": "# Login\n\nThe sign in page asks for a password, then redirects to the start page.\n",
}


@pytest.fixture
def index(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    ix = Index(tmp_path / "ix")
    ix.add([str(docs)])
    ix.glossary.add("mime", ["media type", "content type"])
    yield ix
    ix.close()


def names(response) -> list[str]:
    return [hit.doc_key.rsplit("/", 1)[-1] for hit in response.hits]


def search(index, query, **settings):
    return index.search(query, mode="lexical", relax=False, **settings)


def phrases(index, scopes=None):
    return index.glossary.phrases(scopes)


def test_a_typed_alias_of_several_words_finds_its_group_both_ways(index):
    typed = search(index, "content type")
    assert set(names(typed)) == {"mime.md", "media.md", "header.md"}  # not sniff.md: words apart
    clause = typed.plan.clauses[0]
    assert len(typed.plan.clauses) == 1 and clause.group == "mime"
    assert [i.describe() for i in clause.items] == ["content type", "mime", '"media type"']
    assert typed.plan.expansions == [
        {"word": "content type", "group": "mime", "alternatives": ["mime", "media type"]}
    ]
    # and the other way: the canonical term finds the typed phrase's documents
    assert set(names(search(index, "mime"))) == {"mime.md", "media.md", "header.md"}
    # the other alias finds both the canonical and the first alias
    assert set(names(search(index, "media type"))) == {"mime.md", "media.md", "header.md"}


def test_inflections_and_case_still_match_and_other_words_stay(index):
    response = search(index, "Content Types header")
    assert [c.label for c in response.plan.clauses] == ["Content Types (glossary)", "header"]
    assert names(response)[0] == "header.md"  # the phrase and the other word
    assert set(names(response)) == {"mime.md", "media.md", "header.md"}


def test_a_term_whose_words_come_again_is_matched_once(index):
    response = search(index, "content type header content")
    assert [c.label for c in response.plan.clauses] == ["content type (glossary)", "header"]
    assert response.plan.clauses[0].qtf == 1


def test_longest_term_wins_where_terms_overlap(index):
    index.glossary.add("content header", ["content type header"])
    index.glossary.add("kind header", ["type header"])
    found = phrases(index)
    parsed = parse_query("content type header parsing", phrases=found)
    assert [c.alternatives[0].text for c in parsed.clauses] == ["content type header", "parsing"]
    # from the left: "content type" starts before "type header" can
    parsed = parse_query("the content type header", phrases=found, syntax="plain")
    assert [c.alternatives[0].text for c in parsed.clauses] == ["the", "content type header"]
    parsed = parse_query("type header content type", phrases=found)
    assert [c.alternatives[0].text for c in parsed.clauses] == ["type header", "content type"]


def test_quotes_and_negations_split_a_phrase_and_stay_literal(index):
    for query in ['"content" type', "content -type", '"content type"', "-content type"]:
        parsed = parse_query(query, phrases=phrases(index))
        assert not any(" " in c.alternatives[0].text and c.kind != "phrase" for c in parsed.clauses), query
    quoted = search(index, '"content type"')
    assert names(quoted) == ["header.md"] and not quoted.plan.expansions  # a phrase in quotes: literal
    assert "header.md" not in names(search(index, "mime -content"))  # the exclusion is literal too


def test_required_or_and_field_clauses_carry_the_group(index):
    required = search(index, "+content +type")
    assert [(c.kind, c.required, c.group) for c in required.plan.clauses] == [("required", True, "mime")]
    assert set(names(required)) == {"mime.md", "media.md", "header.md"}
    either = search(index, "content type OR password")
    assert [(c.kind, c.group) for c in either.plan.clauses] == [("or", "mime")]
    assert set(names(either)) == {"mime.md", "media.md", "header.md", "login.md"}
    field = search(index, "title:content title:type")  # no title says "content type", two say a member
    assert [c.kind for c in field.plan.clauses] == ["field"]
    assert [i.describe() for i in field.plan.clauses[0].items] == [
        "title:content type",
        "title:mime",
        'title:"media type"',
    ]
    assert set(names(field)) == {"mime.md"}  # "# Media" alone is not "media type"
    mixed = parse_query("+content type", phrases=phrases(index))  # unlike words: not one term
    assert [c.alternatives[0].text for c in mixed.clauses] == ["content", "type"]


def test_a_stopword_inside_a_term_stays_in_it(index):
    index.glossary.add("log in", ["sign in"])
    response = search(index, "sign in page")
    assert response.plan.clauses[0].label == "sign in (glossary)"
    assert response.plan.dropped_stopwords == []
    assert names(response)[0] == "login.md"


def test_scoped_terms_are_read_only_in_their_collection(tmp_path):
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "n.md").write_text("# Note\n\nThe media type and the mime name.\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([str(tmp_path / "a")], collection="a")
        ix.add([str(tmp_path / "b")], collection="b")
        ix.glossary.add("mime", ["media type"], scope="a")
        in_a = ix.search("media type", mode="lexical", filters=Filters(collections=("a",)))
        in_b = ix.search("media type", mode="lexical", filters=Filters(collections=("b",)))
    assert [c.group for c in in_a.plan.clauses] == ["mime"]
    assert [c.label for c in in_b.plan.clauses] == ["media", "type"]


def test_match_reasons_and_explain_name_the_group_on_every_surface(index):
    import io

    from kenning.surfaces.render import Style, plan_lines, render_search
    from kenning.surfaces.service import hits_text

    response = search(index, "content type")
    header = next(h for h in response.hits if h.doc_key.endswith("header.md"))
    assert header.match_reasons == [
        {
            "clause": "content type (glossary)",
            "matched": "content type",
            "via_glossary": None,
            "glossary_group": "mime",
            "fields": ["body"],
        }
    ]
    media = next(h for h in response.hits if h.doc_key.endswith("media.md"))
    assert (
        media.match_reasons[0]["matched"] == '"media type"'
        and media.match_reasons[0]["glossary_group"] == "mime"
    )
    # the plan as JSON (HTTP, MCP, --json) and as --explain text
    clause = response.plan.to_dict()["clauses"][0]
    assert clause["glossary_group"] == "mime" and clause["items"][0]["glossary_group"] == "mime"
    assert any("(glossary group 'mime')" in line for line in plan_lines(response))
    text = render_search(response, "text", Style(io.StringIO()))
    assert "matched content type via glossary group 'mime' in body" in text
    # the agents' text form (MCP)
    as_text = hits_text(response.to_dict())
    assert "matched \"media type\" via glossary group 'mime' in body" in as_text
    # a word of an OR group that is not from the glossary names no group
    either = search(index, "content type OR password")
    login = next(h for h in either.hits if h.doc_key.endswith("login.md"))
    assert login.match_reasons[0]["glossary_group"] is None


def test_an_empty_glossary_reads_queries_as_before(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "n.md").write_text("# Note\n\ncontent type words\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([str(tmp_path / "d")])
        response = ix.search("content type", mode="lexical")
    assert [c.label for c in response.plan.clauses] == ["content", "type"]


def test_the_parser_never_raises_with_glossary_phrases():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kenning.analysis.analyzer import Analyzer
    from kenning.glossary.expansion import GlossaryPhrases

    found = GlossaryPhrases({"content type", "sign in", "a b c"}, Analyzer())
    words = st.sampled_from(
        ["content", "type", "Types", "sign", "in", "a", "b", "c", "OR", '"', "+", "-", "title:"]
    )

    @settings(max_examples=500, deadline=None)
    @given(st.lists(words | st.text(max_size=5), max_size=12).map(" ".join))
    def check(text):
        for syntax in ("dialect", "plain"):
            parsed = parse_query(text, syntax=syntax, phrases=found)
            assert all(a.text for c in parsed.clauses for a in c.alternatives)
            joined = [a.text.split() for c in parsed.clauses for a in c.alternatives if isinstance(a, Word)]
            # a word made of several is always a whole glossary term
            assert all(found.longest(w) == len(w) for w in joined if len(w) > 1)

    check()


def test_an_acronym_and_its_spelled_out_term_keep_their_rules(index):
    index.glossary.add("JWT", ["JSON Web Token"])
    spelled = search(index, "json web tokens expire")
    assert spelled.plan.clauses[0].label == "json web tokens (glossary)"
    assert [i.describe() for i in spelled.plan.clauses[0].items] == ["json web tokens", "JWT"]
    # the acronym itself is one word, expanded as before; its group is not a phrase to the parser
    acronym = search(index, "JWT expire")
    assert acronym.plan.clauses[0].label == "JWT (glossary)"
    assert [i.describe() for i in acronym.plan.clauses[0].items] == ["JWT", '"JSON Web Token"']


def test_a_field_word_is_still_taken_as_typed_by_spelling(index):
    response = index.search("title:hedaers", mode="lexical", spell=True, relax=False)
    assert response.plan.corrections == [] and response.hits == []
