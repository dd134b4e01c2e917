"""The entity graph: extraction, significance-weighted edges, the one-hop walk, and the graph signal."""

import json
import math

import pytest
from pyroaring import BitMap

from kenning import Index
from kenning.entities.extract import OPENING, GlossaryMatcher, extract
from kenning.entities.graph import EntityGraph, edge_weight, relatedness, signed_root_g2
from kenning.store.records import EntityPosting
from kenning.surfaces.cli import main


def test_names_codes_tags_and_glossary_terms_are_extracted_and_folded():
    text = (
        "Then Edmond Dantès sailed the Pharaon to Marseilles. The young man smiled at M. Morrel. "
        "Later the Count of Monte Cristo called `parseQueryString` on PostgreSQL."
    )
    found = extract(
        text, {"front_matter": {"tags": ["auth", "JWT keys"]}}, GlossaryMatcher({"postgres": ["PostgreSQL"]})
    )
    assert found["edmond dantes"] == ("Edmond Dantès", "name")
    for key in ("edmond", "dantes", "pharaon", "marseilles", "morrel", "count of monte cristo"):
        assert found[key][1] == "name", key
    assert "the" not in found and "later" not in found and "young" not in found
    assert (
        found["parsequerystring"][1] == "code" and found["auth"][1] == "tag" and found["jwt keys"][1] == "tag"
    )
    assert found["postgres"] == ("postgres", "glossary")


def test_a_sentence_opening_word_is_a_name_only_where_it_is_one_elsewhere():
    assert "when" not in extract("When they came, Lucy slept. Lucy woke.")
    assert "lucy" in extract("Lucy slept. Then Mina saw Lucy.")
    assert "well" not in extract("Well I went to Whitby.")
    # a full stop after a title does not open a sentence; one after anything else does
    assert extract("We met Dr. Seward there.")["seward"] == ("Seward", "name")
    assert "sadly" not in extract("We left at noon. Sadly it rained on Whitby.")
    assert extract("Old Louis waited.\nThen Édouard came.")["edouard"] == ("Édouard", "name")
    # a possessive ends a name, with either apostrophe; digits between words do not open a sentence
    for text in ("They saw Van Helsing's bag.", "They saw Van Helsing’s bag."):
        found = extract(text)
        assert "van helsing" in found and "s" not in found and "van helsing s" not in found
    assert extract("in 1893 Jonathan Harker left")["jonathan harker"] == ("Jonathan Harker", "name")


def test_significance_is_the_signed_root_of_the_log_likelihood_ratio():
    n, a, b, k = 1000, 10, 10, 8
    cells = [(k, a * b / n), (a - k, a * (n - b) / n), (b - k, (n - a) * b / n)]
    cells.append((n - a - b + k, (n - a) * (n - b) / n))
    g2 = 2 * sum(o * math.log(o / e) for o, e in cells if o > 0)
    assert signed_root_g2(n, a, b, k) == pytest.approx(math.sqrt(g2))
    assert relatedness(n, a, b, k) == pytest.approx(math.tanh(math.log1p(math.sqrt(g2)) / 3))
    assert relatedness(n, 500, 500, 200) < 0  # less often together than chance: avoidance
    assert relatedness(n, 10, n, 10) == 0.0  # an entity in every chunk says nothing
    # one sighting is not significance: the z score of a = 33, b = 1, k = 1 is 7.5, its root G2 2.6
    assert signed_root_g2(1873, 33, 1, 1) < 3
    assert edge_weight(1873, 33, 1, 1) < edge_weight(1873, 33, 40, 10)


def graph_of(postings: dict[str, list[int]], n: int) -> EntityGraph:
    return EntityGraph(
        [EntityPosting(k, k.title(), "name", BitMap(list(v))) for k, v in postings.items()], BitMap(range(n))
    )


def test_a_true_pair_outranks_a_promiscuous_hub_with_perfect_jaccard_overlap():
    # 1,000 chunks. "dantes" is in 400; "edmond" in 50, every one of them with dantes; the hub
    # "marseille" is in 950, every dantes chunk among them (its overlap with dantes is perfect)
    graph = graph_of({"dantes": range(400), "edmond": range(50), "marseille": range(950)}, 1000)
    by_jaccard = graph.neighbours("dantes", 8, scoring="jaccard")
    assert [e.key for e in by_jaccard] == ["marseille", "edmond"]  # Jaccard is fooled by the hub
    assert by_jaccard[0].k == 400  # the hub holds every chunk dantes is in
    by_significance = graph.neighbours("dantes", 8)
    assert by_significance[0].key == "edmond"
    hub = [e for e in by_significance if e.key == "marseille"]
    assert not hub or hub[0].weight < by_significance[0].weight
    assert by_significance[0].weight == pytest.approx(edge_weight(1000, 400, 50, 50))


def test_the_walk_takes_the_max_across_seeds_and_mass_is_normalised():
    graph = graph_of({"mina": [0, 1, 2], "jonathan": [0, 1, 3], "hub": [0, 1, 2, 3, 4], "other": [7]}, 40)
    walk = graph.walk(["mina", "jonathan"], top=8, decay=0.5)
    hub = walk.reached.get("hub")
    assert hub is not None and hub.weight <= 0.5  # one hop at decay 0.5, never summed over seeds
    single = max(
        0.5 * e.weight
        for e in graph.neighbours("mina", 8) + graph.neighbours("jonathan", 8)
        if e.key == "hub"
    )
    assert hub.weight == pytest.approx(single)
    mass = graph.mass(walk)
    assert mass.max() == pytest.approx(1.0) and mass[0] == pytest.approx(1.0) and mass[7] == 0.0


def test_query_entities_resolve_longest_first():
    graph = graph_of({"edmond dantes": [1], "edmond": [1, 2], "dantes": [1, 3], "pharaon": [4]}, 10)
    assert graph.resolve("How does Edmond Dantès's father die aboard the PHARAON?") == [
        "edmond dantes",
        "pharaon",
    ]


@pytest.fixture
def novel(tmp_path):
    root = tmp_path / "book"
    root.mkdir()
    chapters = []
    for i in range(12):
        people = "Mina and Jonathan Harker" if i % 3 == 0 else "Lucy Westenra and Arthur Holmwood"
        chapters.append(f"## Chapter {i}\n\nIn this part {people} walked to the harbour at Whitby.\n")
    chapters.append("## The letter\n\nJonathan Harker wrote to Mina from the castle.\n")
    (root / "novel.md").write_text("# Novel\n\n" + "\n".join(chapters))
    index = Index(tmp_path / "ix")
    index.add([root])
    yield index, tmp_path / "ix"
    index.close()


def test_the_graph_signal_fuses_explains_and_kenning_graph_lists_neighbours(novel, capsys):
    index, directory = novel
    response = index.search("Jonathan Harker", mode="hybrid", w_graph=0.4, w_dense=0, explain=True)
    graph_info = response.funnel.channels["graph"]
    assert [e["entity"] for e in graph_info["entities"]] == ["jonathan harker"]
    assert any(n["via"] == "jonathan harker" for n in graph_info["neighbours"])
    top = response.hits[0]
    assert "graph" in top.channels and top.explain["graph"]["entities"]
    argv = ["search", "Jonathan Harker", "--index", str(directory), "--mode", "hybrid", "--w-graph", "0.4"]
    assert main([*argv, "--explain"]) == 0
    text = capsys.readouterr().out
    assert "graph: query entities 'jonathan harker'; neighbours" in text and "(query entity)" in text
    assert main(["graph", "Jonathan Harker", "--index", str(directory), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["entity"] == "jonathan harker" and listed["neighbours"][0]["entity"] in (
        "mina",
        "mina and jonathan harker",
    )
    assert {"a", "b", "k", "z", "weight"} <= set(listed["neighbours"][0])
    assert main(["graph", "Count Dracula", "--index", str(directory)]) == 2
    assert "no indexed chunk holds the entity 'Count Dracula'" in capsys.readouterr().err


def test_blend_modes_use_the_graph_weight(novel):
    index, _ = novel
    off = index.search("Mina", mode="hybrid", fusion="blend", w_graph=0, w_dense=0)
    on = index.search("Mina", mode="hybrid", fusion="blend", w_graph=0.4, w_dense=0)
    norm = index.search("Mina", mode="hybrid", fusion="blend_norm", w_graph=0.4, w_dense=0)
    assert "graph" not in off.hits[0].channels
    assert "graph" in on.hits[0].channels and "graph" in norm.hits[0].channels
    assert on.hits[0].score > off.hits[0].score


def test_entities_follow_the_index_incrementally(novel, tmp_path):
    index, _ = novel
    book = tmp_path / "book"
    (book / "extra.md").write_text("# Extra\n\nQuincey Morris rode with Godalming.\n")
    index.add([book])
    assert index.entity_graph().df("quincey morris") == 1
    (book / "extra.md").unlink()
    index.add([book])
    assert index.entity_graph().df("quincey morris") == 0


def test_a_name_is_split_at_punctuation_and_never_repeats_a_word():
    assert sorted(extract("Then Julie, Julie, come here.")) == ["julie"]
    assert "italy sinbad" not in extract("He sailed to Italy; Sinbad waited.")
    assert sorted(k for k in extract("They saw Emmanuel Emmanuel there.")) == ["emmanuel"]
    found = extract("They took the train to Buda-Pesth with Quincey P. Morris.")
    assert "buda pesth" in found and "quincey p morris" in found


def test_an_opening_word_is_recorded_for_the_corpus_to_judge():
    found = extract("Happily Van Helsing came. Poor Lucy! The poor man wept.")
    assert "van helsing" in found  # the rest of a run an opener begins is a name either way
    assert OPENING + "happily" in found and OPENING + "happily van helsing" in found
    assert "happily" not in found and "poor" not in found
    # a word after a possessive is capitalised as a title ("Seward's Diary"), not as a name
    assert "diary" not in extract("We read Dr. Seward's Diary today.")


def settled(postings: dict[str, list[int]], n: int, word_chunks=None) -> EntityGraph:
    return EntityGraph(
        [EntityPosting(k, k.strip(OPENING).title(), "name", BitMap(v)) for k, v in postings.items()],
        BitMap(range(n)),
        word_chunks,
    )


def test_an_opener_is_a_name_only_where_the_corpus_capitalises_it_inside_sentences():
    graph = settled(
        {
            OPENING + "hello": [1, 2, 3],
            OPENING + "hello carconte": [1],
            "carconte": [1, 4],
            OPENING + "dantes": [5, 6],
            "dantes": [7, 8],
            OPENING + "journal": list(range(10, 40)),
            "journal": [41],
        },
        50,
    )
    assert graph.lookup("hello") is None and graph.lookup("hello carconte") is None
    assert graph.df("dantes") == 4  # seen inside sentences: its openings count too
    assert graph.df("journal") == 1  # once inside against thirty openings: the openings are titles


def test_a_word_mostly_written_in_lower_case_is_not_a_name():
    graph = settled({"diary": [1, 2, 3], "lucy": [1, 4]}, 100, lambda words: {"diary": 40, "lucy": 2})
    assert graph.lookup("diary") is None and graph.lookup("lucy") == "lucy"


def test_a_full_name_and_its_unambiguous_parts_are_one_entity():
    graph = settled(
        {
            "edmond dantes": [1, 2, 3],
            "dantes": [1, 2, 3, 4, 5, 6],
            "edmond": [1, 2, 7],
            "jonathan harker": [10, 11, 12],
            "mina harker": [13, 14],
            "harker": [10, 13, 15],
            "jonathan": [10, 16],
            "london directory": [20, 21],
            "london": [20, 22, 23],
        },
        30,
    )
    assert graph.lookup("dantes") == graph.lookup("edmond") == "edmond dantes"
    assert graph.df("dantes") == 7 and graph.members[graph.index["dantes"]][0] == "edmond dantes"
    assert graph.resolve("What did Dantès find?") == ["edmond dantes"]
    assert graph.lookup("harker") == "harker"  # Jonathan's and Mina's: ambiguous, kept apart
    assert graph.lookup("jonathan") == "jonathan harker"
    assert graph.lookup("london") == "london"  # "Directory" is no name: not a person's full name


def test_pairs_seen_together_too_rarely_are_not_neighbours():
    rare = {"dracula": list(range(30)), "hamlet": [0, 1], "arthur": list(range(20, 60))}
    graph = graph_of(rare, 200)
    keys = [e.key for e in graph.neighbours("dracula", 8)]
    assert "hamlet" not in keys and keys == ["arthur"]
