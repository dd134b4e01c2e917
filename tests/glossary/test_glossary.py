"""The glossary store: groups and statuses, expansion, the suggest -> pending -> approve/reject
lifecycle, merge, split, scopes, import/export, and the `kenning glossary` command."""

import argparse
import csv
import io
import json

import pytest

from kenning.api.index import Index
from kenning.glossary.glossary import Alternative, Glossary, GlossaryError
from kenning.surfaces.cli_glossary import add_glossary_parser, cmd_glossary

AUTH_DOC = """# Authentication

## Tokens

Every request carries a JSON Web Token (JWT). The JWT is signed with a key that we rotate monthly.
A JWT expires after an hour. Clients refresh the JWT before it expires.

## One-time passwords

Second factors use an OTP (one-time password) sent by text message. The OTP is valid for a minute.
Users may opt out of text messages and opt in to an authenticator app instead.
"""

COLOUR_DOC = """# Theme

The colour of the header follows the colour of the brand. Pick a colour with enough contrast.
"""

COLOR_DOC = """# Palette

The color of a button tells its role. Each color has a dark variant; the color tokens live in one file.
"""


@pytest.fixture
def index(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "auth.md").write_text(AUTH_DOC)
    (docs / "theme.md").write_text(COLOUR_DOC)
    (docs / "palette.md").write_text(COLOR_DOC)
    ix = Index(tmp_path / "ix")
    ix.add([str(docs)])
    yield ix
    ix.close()


@pytest.fixture
def glossary(index):
    return Glossary(index.store, index.analyzer)


def surfaces(alternatives):
    return sorted(a.surface for a in alternatives)


def pending_pairs(g):
    return {(p["term"], p["canonical"]) for p in g.pending()}


# ----------------------------------------------------------------------------------------- store
def test_reads_work_on_an_empty_glossary(glossary, index):
    assert glossary.expansions("auth") == []
    assert glossary.groups() == [] and glossary.pending() == [] and glossary.is_empty()


def test_add_and_expand_by_analysed_form(glossary):
    gid = glossary.add("auth", ["authentication", "sign-in", "login"])
    alts = glossary.expansions("Auth")
    assert surfaces(alts) == ["authentication", "login", "sign-in"]
    assert all(isinstance(a, Alternative) and a.group_id == gid and a.canonical == "auth" for a in alts)
    assert {a.status for a in alts} == {"alias"}
    # stemming and case: "auths" and "AUTH" are the canonical term too
    assert surfaces(glossary.expansions("auths")) == surfaces(alts)
    # an alias expands to the canonical (status canonical) and the other aliases, never itself
    from_login = glossary.expansions("Login")
    assert surfaces(from_login) == ["auth", "authentication", "sign-in"]
    assert next(a for a in from_login if a.surface == "auth").status == "canonical"
    assert surfaces(glossary.expansions("sign-in")) == ["auth", "authentication", "login"]
    assert glossary.expansions("password") == []


def test_add_extends_an_existing_group_and_refuses_nonsense(glossary):
    gid = glossary.add("auth", ["login"])
    assert glossary.add("Auth", ["sign-in"]) == gid
    assert glossary.add("login", ["logon"]) == gid  # an approved alias names its group too
    assert surfaces(glossary.expansions("auth")) == ["login", "logon", "sign-in"]
    with pytest.raises(GlossaryError, match="same term"):
        glossary.add("auth", ["AUTH"])
    with pytest.raises(GlossaryError, match="no searchable words"):
        glossary.add("--", ["x"])


def test_expansions_cache_follows_commits(glossary, index):
    glossary.add("auth", ["login"])
    assert surfaces(glossary.expansions("auth")) == ["login"]
    # another Glossary object on the same index writes; the first sees it via the generation
    Glossary(index.store, index.analyzer).add("auth", ["sign-in"])
    assert surfaces(glossary.expansions("auth")) == ["login", "sign-in"]


def test_expansions_use_the_cached_lookup(glossary):
    """After the first lookup of a generation, expansions never read the glossary tables again."""
    for n in range(200):
        glossary.add(f"term{n}", [f"alias{n}a", f"alias{n}b"])
    glossary.expansions("term1")
    statements = []
    glossary.store.conn.set_trace_callback(statements.append)
    try:
        for n in range(500):
            assert len(glossary.expansions(f"term{n % 200}")) == 2
    finally:
        glossary.store.conn.set_trace_callback(None)
    assert not [s for s in statements if "glossary_" in s]


def test_protected_flag_is_kept_on_manual_add(glossary):
    gid = glossary.add("JSON Web Token", ["JWT", "parse_token", "jwt token"])
    group = next(g for g in glossary.groups() if g["id"] == gid)
    flags = {m["term"]: m["protected"] for m in group["members"]}
    assert flags == {"JSON Web Token": None, "JWT": "acronym", "parse_token": "identifier", "jwt token": None}


def test_scopes(glossary):
    glossary.add("ticket", ["issue"], scope="work")
    glossary.add("ticket", ["fare"], scope="travel")
    glossary.add("ticket", ["pass"])  # global
    assert surfaces(glossary.expansions("ticket")) == ["fare", "issue", "pass"]
    assert surfaces(glossary.expansions("ticket", ["work"])) == ["issue", "pass"]
    assert surfaces(glossary.expansions("ticket", [])) == ["pass"]
    assert [g["scope"] for g in glossary.groups(scope="travel")] == ["travel"]
    with pytest.raises(GlossaryError, match="names 3 groups"):
        glossary.approve("fare", group="ticket")
    work = glossary.groups(scope="work")[0]["id"]
    travel = glossary.groups(scope="travel")[0]["id"]
    with pytest.raises(GlossaryError, match="different scopes"):
        glossary.merge(work, travel)


# ----------------------------------------------------------------------------------------- lifecycle
def test_suggest_pending_approve_reject_lifecycle(glossary, index):
    added = glossary.suggest(limit=50)
    pairs = {(a["term"], a["canonical"]) for a in added}
    assert ("JWT", "JSON Web Token") in pairs
    assert ("OTP", "one-time password") in pairs
    assert ("colour", "color") in pairs or ("color", "colour") in pairs
    assert pending_pairs(glossary) == pairs
    jwt = next(a for a in added if a["term"] == "JWT")
    evidence = jwt["evidence"]
    assert evidence["kind"] == "acronym" and 0 < evidence["score"] <= 1
    assert evidence["counts"]["definitions"] == 1
    example = evidence["examples"][0]
    chunk = index.get(example["chunk"])[0]
    assert "JSON Web Token (JWT)" in chunk.body and "JSON Web Token" in example["text"]

    # pending terms do not expand anything yet
    assert glossary.expansions("jwt") == []
    assert glossary.groups() == []  # a proposal is not a group until something in it is approved
    assert len(glossary.groups(include_proposed=True)) >= 2

    glossary.approve("JWT")
    assert surfaces(glossary.expansions("jwt")) == ["JSON Web Token"]
    assert surfaces(glossary.expansions("json web token")) == ["JWT"]
    assert [g["canonical"] for g in glossary.groups()] == ["JSON Web Token"]

    colour_pending = next(p for p in glossary.pending() if p["term"] in ("colour", "color"))
    glossary.reject(colour_pending["term"])
    assert glossary.expansions("colour") == [] and glossary.expansions("color") == []
    with pytest.raises(GlossaryError, match="was rejected"):
        glossary.approve(colour_pending["term"])

    # nothing new to propose: the rejected pair stays out, the others are already queued or approved
    assert glossary.suggest(limit=50) == []
    assert not any(p["term"] in ("colour", "color") for p in glossary.pending())

    # even after the rejected term's group is merged elsewhere, the pair is not proposed again
    other = glossary.add("hue", ["tint"])
    glossary.merge(colour_pending["group"], other)
    assert glossary.suggest(limit=50) == []

    # reject an approved alias: it stops expanding
    glossary.reject("JWT")
    assert glossary.expansions("jwt") == []


def test_suggest_respects_limit_and_judge(glossary):
    seen = []

    def judge(candidate):
        seen.append(candidate)
        return candidate["kind"] != "acronym"

    added = glossary.suggest(limit=50, judge=judge)
    assert seen and {"canonical", "term", "kind", "score", "evidence"} <= set(seen[0])
    assert added and all(a["kind"] != "acronym" for a in added)
    assert all(a["evidence"]["judge"] == "accepted" for a in added)
    # the acronyms the judge dropped can still be proposed later
    again = glossary.suggest(limit=1)
    assert len(again) == 1 and again[0]["kind"] == "acronym"


def test_suggest_extends_a_group_where_a_term_is_approved(glossary):
    gid = glossary.add("JWT", ["bearer token"])
    added = glossary.suggest(limit=50, miners=["acronym"])
    jwt = next(a for a in added if "JSON Web Token" in (a["term"], a["canonical"]))
    assert jwt["group"] == gid and jwt["term"] == "JSON Web Token"
    glossary.approve("JSON Web Token")
    assert surfaces(glossary.expansions("jwt")) == ["JSON Web Token", "bearer token"]


def test_suggest_in_one_collection(tmp_path, index, glossary):
    other = tmp_path / "other"
    other.mkdir()
    (other / "net.md").write_text("# Net\n\nPackets cross the Border Gateway Protocol (BGP) mesh.\n")
    index.add([str(other)], collection="network")
    added = glossary.suggest(limit=50, scope="network")
    assert [(a["term"], a["canonical"]) for a in added] == [("BGP", "Border Gateway Protocol")]
    glossary.approve("BGP")
    assert [g["scope"] for g in glossary.groups()] == ["network"]
    assert surfaces(glossary.expansions("bgp", ["network"])) == ["Border Gateway Protocol"]
    assert glossary.expansions("bgp", ["default"]) == []


def test_pending_in_two_groups_needs_a_group(glossary):
    glossary.import_(
        json.dumps(
            {
                "groups": [
                    {"canonical": "car", "members": [{"term": "auto", "status": "pending"}]},
                    {"canonical": "automatic", "members": [{"term": "auto", "status": "pending"}]},
                ]
            }
        )
    )
    with pytest.raises(GlossaryError, match="choose one with --group"):
        glossary.approve("auto")
    glossary.approve("auto", group="car")
    assert surfaces(glossary.expansions("auto")) == ["car"]
    glossary.reject("auto", group="automatic")
    assert glossary.pending() == []
    with pytest.raises(GlossaryError, match="not in the glossary"):
        glossary.approve("nonexistent")
    with pytest.raises(GlossaryError, match="no glossary group"):
        glossary.approve("auto", group="boat")
    with pytest.raises(GlossaryError, match="canonical term"):
        glossary.reject("car")


# ----------------------------------------------------------------------------------------- merge / split
def test_merge(glossary):
    a = glossary.add("auth", ["login"])
    b = glossary.add("authentication", ["sign-in", "login"])
    glossary.import_(
        json.dumps([{"canonical": "authentication", "members": [{"term": "logon", "status": "pending"}]}])
    )
    glossary.merge("authentication", a)
    groups = glossary.groups()
    assert [g["id"] for g in groups] == [a]
    statuses = {m["term"]: m["status"] for m in groups[0]["members"]}
    assert statuses == {
        "auth": "canonical",
        "login": "alias",
        "authentication": "alias",
        "sign-in": "alias",
        "logon": "pending",
    }
    assert surfaces(glossary.expansions("sign-in")) == ["auth", "authentication", "login"]
    with pytest.raises(GlossaryError, match=f"no glossary group with id {b}"):
        glossary.merge(b, a)
    with pytest.raises(GlossaryError, match="into itself"):
        glossary.merge(a, "auth")


def test_split(glossary):
    gid = glossary.add("auth", ["authentication", "author"])
    new = glossary.split("author")
    assert new != gid
    assert surfaces(glossary.expansions("auth")) == ["authentication"]
    assert glossary.expansions("author") == []  # alone in its new group
    old = next(g for g in glossary.groups() if g["id"] == gid)
    assert {m["term"]: m["status"] for m in old["members"]}["author"] == "rejected"
    assert next(g for g in glossary.groups() if g["id"] == new)["canonical"] == "author"
    # splitting the canonical hands the group to its oldest alias
    glossary.add("auth", ["sign-in"])
    glossary.split("auth", group=gid)
    old = next(g for g in glossary.groups() if g["id"] == gid)
    assert old["canonical"] == "authentication"
    assert surfaces(glossary.expansions("authentication")) == ["sign-in"]
    with pytest.raises(GlossaryError, match="no alias to take its place"):
        glossary.split("author", group=new)


# ----------------------------------------------------------------------------------------- import / export
def build_sample(g):
    g.add("auth", ["authentication", "sign-in"])
    g.add("JWT", ["JSON Web Token"], scope="api")
    g.import_(
        json.dumps(
            {
                "groups": [
                    {
                        "canonical": "auth",
                        "members": [
                            {
                                "term": "login",
                                "status": "pending",
                                "evidence": {"kind": "manual", "note": "x"},
                            },
                            {"term": "author", "status": "rejected"},
                        ],
                    }
                ]
            }
        )
    )


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_export_import_round_trip(tmp_path, glossary, fmt):
    build_sample(glossary)
    text = glossary.export(fmt)
    fresh = Index(tmp_path / f"fresh-{fmt}")
    try:
        other = Glossary(fresh.store, fresh.analyzer)
        counts = other.import_(text, fmt)
        assert counts["groups_created"] == 2 and counts["terms_added"] == 5
        assert other.export(fmt) == text
        assert surfaces(other.expansions("auth")) == ["authentication", "sign-in"]
        assert surfaces(other.expansions("jwt", ["api"])) == ["JSON Web Token"]
        assert other.expansions("jwt", []) == []
        assert [(p["term"], p["evidence"]) for p in other.pending()] == [
            ("login", {"kind": "manual", "note": "x"})
        ]
        # importing the same file again changes nothing
        assert other.import_(text, fmt) == {"groups_created": 0, "terms_added": 0, "terms_updated": 0}
    finally:
        fresh.close()


def test_csv_export_shape(glossary):
    build_sample(glossary)
    rows = list(csv.DictReader(io.StringIO(glossary.export("csv"))))
    assert rows[0] == {
        "scope": "",
        "group": "auth",
        "term": "auth",
        "status": "canonical",
        "protected": "",
        "evidence": "",
    }
    assert {(r["group"], r["term"], r["status"]) for r in rows} >= {
        ("auth", "login", "pending"),
        ("auth", "author", "rejected"),
        ("JWT", "JWT", "canonical"),
    }
    assert next(r for r in rows if r["term"] == "JWT")["protected"] == "acronym"


def test_bad_import_names_the_line_and_field(glossary):
    bad_status = "scope,group,term,status\n,auth,login,alias\n,auth,logon,maybe\n"
    with pytest.raises(GlossaryError, match=r"line 3: field 'status' is 'maybe'"):
        glossary.import_(bad_status, "csv")
    assert glossary.groups() == []  # nothing of a bad file is kept
    with pytest.raises(GlossaryError, match=r"line 2: field 'term' is empty"):
        glossary.import_("group,term\nauth,\n", "csv")
    with pytest.raises(GlossaryError, match="header must name"):
        glossary.import_("a,b\n1,2\n", "csv")
    with pytest.raises(GlossaryError, match=r"line 2, column \d+"):
        glossary.import_('{"groups": [\n  {"canonical": }]}', "json")
    with pytest.raises(GlossaryError, match=r"group 2: field 'canonical'"):
        glossary.import_(json.dumps({"groups": [{"canonical": "a"}, {"members": []}]}), "json")
    with pytest.raises(GlossaryError, match=r"group 1 \('a'\) member 1: field 'term'"):
        glossary.import_(json.dumps([{"canonical": "a", "members": [{"status": "alias"}]}]), "json")
    with pytest.raises(GlossaryError, match="unknown glossary format"):
        glossary.import_("", "xml")


# ----------------------------------------------------------------------------------------- CLI
def parser():
    def add_common(p):
        p.add_argument("--index")
        p.add_argument("--json", action="store_true")
        p.add_argument("-q", "--quiet", action="store_true")

    top = argparse.ArgumentParser(prog="kenning")
    sub = top.add_subparsers(dest="command", required=True)
    add_glossary_parser(sub, add_common)
    return top


def run(capsys, index, *argv):
    args = parser().parse_args(["glossary", *argv, "--index", str(index.directory)])
    code = cmd_glossary(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_subcommands(tmp_path, index, capsys):
    code, out, _ = run(capsys, index, "add", "auth", "authentication", "sign-in", "JWT")
    assert code == 0 and "#1  auth" in out and "protected: acronym" in out

    code, out, _ = run(capsys, index, "ls", "--json")
    groups = json.loads(out)
    assert code == 0 and [m["term"] for m in groups[0]["members"]] == [
        "auth",
        "authentication",
        "sign-in",
        "JWT",
    ]

    code, out, _ = run(capsys, index, "suggest", "--limit", "2", "--json")
    added = json.loads(out)["added"]
    assert code == 0 and len(added) == 2
    every = len(index.store.read_snapshot().live)
    assert json.loads(out)["mined"] == {"chunks": every, "of": every, "documents": 3}  # the whole index

    code, out, _ = run(capsys, index, "pending")
    assert code == 0 and "2 pending" in out and "→" in out
    code, out, _ = run(capsys, index, "pending", "--json")
    first, second = json.loads(out)

    assert run(capsys, index, "approve", first["term"])[0] == 0
    code, out, _ = run(capsys, index, "reject", second["term"], "--json")
    assert code == 0 and json.loads(out) == {"term": second["term"], "status": "rejected"}

    code, _, err = run(capsys, index, "approve", second["term"])
    assert code == 2 and err.startswith("kenning: error: ") and "was rejected" in err

    run(capsys, index, "add", "signon", "login")
    code, out, _ = run(capsys, index, "merge", "signon", "auth")
    assert code == 0 and "merged" in out
    code, out, _ = run(capsys, index, "split", "JWT")
    assert code == 0 and "own group" in out

    out_file = tmp_path / "glossary.csv"
    code, out, _ = run(capsys, index, "export", "-o", str(out_file))
    assert code == 0 and out_file.read_text().startswith("scope,group,term,status")
    code, out, _ = run(capsys, index, "export", "--format", "json")
    exported = json.loads(out)
    assert exported["kenning_glossary"] == 1 and exported["groups"]

    bad = tmp_path / "bad.csv"
    bad.write_text("group,term,status\nauth,logon,perhaps\n")
    code, _, err = run(capsys, index, "import", str(bad))
    assert code == 2 and "bad.csv: line 2: field 'status'" in err
    good = tmp_path / "good.json"
    good.write_text(json.dumps([{"canonical": "passkey", "members": ["webauthn"]}]))
    code, out, _ = run(capsys, index, "import", str(good))
    assert code == 0 and "1 group(s) created" in out
    code, _, err = run(capsys, index, "import", str(tmp_path / "glossary.txt"))
    assert code == 2 and "add --format" in err

    code, _, err = run(capsys, index, "approve", "nothing-like-this")
    assert code == 2 and "not in the glossary" in err


def test_cli_without_an_index(tmp_path, capsys):
    args = parser().parse_args(["glossary", "ls", "--index", str(tmp_path / "none")])
    assert cmd_glossary(args) == 2
    assert "no kenning index" in capsys.readouterr().err


def test_a_large_index_is_mined_in_whole_documents_spread_over_it(tmp_path, monkeypatch, capsys):
    """Mining reads every word in Python (a 1M-chunk index took over 5 minutes and 9.7 GB before it
    was stopped): past MINE_CHUNKS the miners read whole documents, every k-th by id, and say so."""
    from kenning.glossary import miners

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        sections = "".join(
            f"## Part {j}\n\nnote {i} part {j} about JSON Web Token (JWT) use\n\n" for j in range(3)
        )
        (docs / f"n{i:02d}.md").write_text(f"# Note {i}\n\n{sections}")
    ix = Index(tmp_path / "ix")
    ix.add([str(docs)])
    every = len(ix.store.read_snapshot().live)
    share: list = []
    assert len(miners.load_passages(ix.store, share=share)) == every == share[0].of
    monkeypatch.setattr(miners, "MINE_CHUNKS", every // 4)
    share.clear()
    passages = miners.load_passages(ix.store, max_chunks=miners.MINE_CHUNKS, share=share)
    read = share[0]
    assert read.chunks == len(passages) <= every // 4 + every // 12 and read.of == every
    sources = {p.source for p in passages}
    assert read.sources == len(sources) >= 2  # spread: more than one document, each one whole
    for source in sources:
        assert sum(p.source == source for p in passages) == every // 12
    code, out, _ = run(capsys, ix, "suggest")
    assert code == 0 and f"mined {read.chunks:,} of {every:,} chunks ({read.sources:,} whole documents" in out
