"""Cited answers: extractive answers with citations, an honest not-found, and chat models over HTTP."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from kenning import Index
from kenning.answer.answering import answer_question
from kenning.answer.planner import without_frame
from kenning.models.chat import ChatError, ChatModel, make_chat_model
from kenning.surfaces.cli import main

VOYAGE = """# The voyage of the Pharaon

## Arrival

The Pharaon entered the harbour of Marseilles on the last day of February.
Edmond Dantès, the young mate, stood at the helm beside the pilot.
Captain Leclère had died of a brain fever off the coast of Naples, and Dantès took command.

## The father

Old Louis Dantès lived alone in a small room in the Allées de Meilhan.
When his son was taken to prison, the old man refused to eat.
He died of hunger and grief before the year was out, calling his son's name.
"""

OTHER = """# Gardening notes

## Roses

Prune the roses in early spring, before the buds swell.
Water them deeply once a week during dry summers.
The leaves became pale and thin after the long drought.
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    root = tmp_path_factory.mktemp("books")
    (root / "voyage.md").write_text(VOYAGE)
    (root / "garden.md").write_text(OTHER)
    directory = root.parent / (root.name + "-ix")
    index = Index(directory)
    index.add([root])
    index.embed()
    yield index, directory, root
    index.close()


def test_an_answer_cites_file_heading_lines_and_quoted_words(library):
    index, _, root = library
    result = index.answer("What did the old man die of after his son went to prison?").to_dict()
    assert result["found"] is True and result["method"] == "extractive"
    assert "hunger and grief" in result["answer"]
    lines = (root / "voyage.md").read_text().splitlines()
    for c in result["citations"]:
        assert c["path"].endswith("voyage.md") and c["heading"].startswith("The voyage of the Pharaon")
        quoted = " ".join(lines[c["start_line"] - 1 : c["end_line"]])
        assert c["quote"] in " ".join(quoted.split())  # the quote is what those lines say
    assert any("hunger" in c["quote"] for c in result["citations"])
    angles = [q["angle"] for q in result["queries"]]
    assert angles[0] == "question" and "event" in angles and len(angles) >= 3


def test_a_question_about_someone_the_sources_never_name_comes_back_not_found(library):
    index, _, _ = library
    result = index.answer("What did Captain Nemo tell Dantès about the pilot?").to_dict()
    assert result["found"] is False and result["citations"] == []
    assert result["judge"]["missing_names"] and "nemo" in result["answer"].lower()
    assert result["answer"].startswith("The indexed sources do not answer this")
    assert result["closest"] and result["closest"][0]["path"].endswith("voyage.md")


def test_kenning_answer_json_has_the_promised_shape(library, capsys):
    _, directory, _ = library
    assert (
        main(
            ["answer", "Who", "took", "command", "of", "the", "Pharaon?", "--index", str(directory), "--json"]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert {"question", "found", "answer", "citations", "queries"} <= set(result)
    assert result["found"] is True and "Dantès took command" in result["answer"]
    assert {"path", "heading", "start_line", "end_line", "quote"} <= set(result["citations"][0])
    assert main(["answer", "  ", "--index", str(directory)]) == 2
    assert "the question is empty" in capsys.readouterr().err


class FakeChat(BaseHTTPRequestHandler):
    """Speaks the OpenAI and Ollama chat protocols; remembers what it was sent."""

    seen: list = []
    reply = "Dantès's father starved himself after his son's arrest [1]. He was old. He died of grief [1]."

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeChat.seen.append((self.path, dict(self.headers), body))
        system = body["messages"][0]["content"]
        text = (
            '{"queries": ["Louis Dantès", "died of hunger grief", "old man prison"]}'
            if "search queries" in system
            else FakeChat.reply
        )
        if self.path.endswith("/api/chat"):
            answer = {"message": {"role": "assistant", "content": text}}
        else:
            answer = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server():
    server = HTTPServer(("127.0.0.1", 0), FakeChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeChat.seen = []
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_a_chat_model_plans_answers_and_must_cite(library, chat_server, monkeypatch):
    index, _, _ = library
    monkeypatch.setenv("KENNING_LLM_API_KEY", "sk-test")
    result = index.answer("How does Edmond's father die?", llm=f"openai:tiny@{chat_server}/v1").to_dict()
    assert result["method"] == "llm:openai:tiny" and result["found"] is True
    assert "He was old." not in result["answer"]  # a sentence without a citation is dropped
    assert any("dropped a sentence without a citation" in n for n in result["notes"])
    assert all(c["path"].endswith(".md") and c["quote"] for c in result["citations"])
    assert [q["angle"] for q in result["queries"]] == ["question", "question", "model", "model", "model"]
    path, headers, body = FakeChat.seen[-1]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-test"
    assert "Passages:" in body["messages"][1]["content"]


def test_a_chat_model_that_finds_nothing_says_not_found(library, chat_server):
    index, _, _ = library
    FakeChat.reply = "NOT FOUND: the passages never mention a cat."
    try:
        result = index.answer("Why did the cat stay ashore?", llm=f"ollama:tiny@{chat_server}").to_dict()
    finally:
        FakeChat.reply = FakeChat.__dict__["reply"]
    assert result["found"] is False and result["answer"] == "the passages never mention a cat."
    path, _, body = FakeChat.seen[-1]
    assert path == "/api/chat" and body["options"]["num_ctx"] >= 8192 and body["stream"] is False


def test_no_model_overrules_the_judge_s_name_and_value_checks(library, chat_server):
    index, _, _ = library
    asked = len(FakeChat.seen)
    result = index.answer("What was the ship's cat called?", llm=f"ollama:tiny@{chat_server}").to_dict()
    assert result["found"] is False and result["judge"]["answer_type"] == "name"
    assert "states the name" in result["answer"] and any(
        "was not asked to answer" in n for n in result["notes"]
    )
    # the model planned the searches but was never asked to answer
    assert not any("Passages:" in body["messages"][-1]["content"] for _, _, body in FakeChat.seen[asked:])


def test_an_uncited_model_sentence_is_cited_only_where_the_passages_hold_its_words():
    from kenning.answer.answering import _attribute

    father = _passage(
        7, 1, ("When his son was taken to prison, the old man refused to eat.", 1), ("He died of hunger.", 1)
    )
    grounded = _attribute("The old man refused to eat and died of hunger.", [father])
    assert grounded is not None and grounded[0] is father
    assert _attribute("The old man was poisoned by his neighbour Caderousse.", [father]) is None


def test_chat_model_specs_come_from_the_user_and_fail_clearly(monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CONFIG", str(tmp_path / "none.toml"))
    for name in ("KENNING_OPENAI_URL", "OPENAI_BASE_URL", "KENNING_LLM"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ChatError, match="unknown LLM spec"):
        ChatModel("gpt-4")
    with pytest.raises(ChatError, match="no address for openai model 'gpt-4o-mini'"):
        ChatModel("openai:gpt-4o-mini")
    with pytest.raises(ChatError, match="is not a file"):
        ChatModel("llama-cpp:/nowhere/model.gguf")
    assert make_chat_model(None) is None
    monkeypatch.setenv("KENNING_OPENAI_URL", "http://127.0.0.1:9/v1")
    assert ChatModel("openai:gpt-4o-mini").url == "http://127.0.0.1:9/v1/chat/completions"


def test_names_the_judge_looks_for(library):
    from kenning.answer.planner import question_names

    index, _, _ = library
    sources = index.answer_sources()
    assert question_names(sources, "How does Edmond Dantès's father die?") == ["edmond dantes"]
    # a possessive one-word name
    assert question_names(sources, "Where did Leclère's ship go?") == ["leclere"]
    # a capitalised word the index never saw is a name to look for; an initial or a title is not
    assert question_names(sources, "What did Captain Nemo P. Smith tell the pilot?") == ["nemo", "smith"]


def _passage(cid, rank, *sentences, heading=None, path="book.md"):
    from kenning.answer.evidence import Passage, Sentence

    heading = heading or f"Book > Chapter {cid}"
    p = Passage(cid, path, heading, 1, 1, " ".join(t for t, _ in sentences), 1.0, ["question"])
    p.sentences = [Sentence(t, 1, 1, window_words=support, rank=rank) for t, support in sentences]
    return p


def test_passages_are_quoted_by_their_best_sentence_with_a_close_runner_up():
    from kenning.answer.answering import choose_sentences

    first = _passage(1, 1, ("She wrote to Mina that evening.", 0.2), ("Lucy had three proposals.", 0.5))
    second = _passage(2, 2, ("Lucy refused him kindly, and he went away to the war.", 0.9))
    third = _passage(3, 3, ("Arthur came.", 0.4), ("Arthur stayed the night.", 0.38))
    fourth = _passage(4, 4, ("Nothing here.", 0.1))
    chosen = choose_sentences([first, second, third, fourth], None)
    # the three passages with the best-supported sentences, best first; a runner-up only when it
    # supports nearly as well as its passage's best, and then in reading order
    assert [(p.chunk_id, s.text) for s, p in chosen] == [
        (2, second.body),
        (1, "Lucy had three proposals."),
        (3, "Arthur came."),
        (3, "Arthur stayed the night."),
    ]
    # one passage per section: a second passage of a quoted chapter gives way to the next chapter's
    same = _passage(5, 5, ("Lucy refused him, and he went to the war.", 0.85), heading=second.heading)
    chosen = choose_sentences([first, second, third, fourth, same], None)
    assert [p.chunk_id for s, p in chosen] == [2, 1, 3, 3]


def test_a_question_asking_for_a_value_is_answered_by_a_sentence_stating_one():
    from kenning.answer.answering import choose_sentences
    from kenning.answer.judge import judge

    talk = _passage(1, 1, ("Lucy told Mina about her suitors.", 0.9))
    age = _passage(2, 2, ("Here am I, who shall be twenty in September, and Lucy laughed.", 0.3))
    for p in (talk, age):
        for s in p.sentences:
            s.states = "twenty" in s.text  # as score_sentences records it for kind "number"
    chosen = choose_sentences([talk, age], "number")
    assert [p.chunk_id for _, p in chosen] == [2]
    assert judge(chosen, [talk, age], ["lucy"], "number", True).found
    # no sentence states a number: not found, whatever the support
    for s in age.sentences:
        s.states = False
    verdict = judge(choose_sentences([talk, age], "number"), [talk, age], ["lucy"], "number", True)
    assert not verdict.found and verdict.answer_type == "number" and verdict.value_stated is False


def test_citations_stay_in_the_best_passage_s_document_unless_another_names_the_question_s_people():
    from kenning.answer.answering import in_one_document

    lucy = _passage(1, 1, ("Lucy's mother fell dead of fright when the wolf broke the window.", 0.9))
    other = _passage(2, 2, ("His mother died of grief in the Catalan village.", 0.9), path="other.md")
    named = _passage(3, 3, ("Lucy, he said, had a mother who died.", 0.9), path="other.md")
    later = _passage(4, 4, ("Lucy's mother had been ill for a long time.", 0.8))
    chosen = [(p.sentences[0], p) for p in (lucy, other, named, later)]
    # another book's passage is quoted only when it names the question's people
    kept = in_one_document(chosen, ["lucy"])
    assert [p.chunk_id for _, p in kept] == [1, 3, 4]
    # a question that names no one stays in the best passage's document
    assert [p.chunk_id for _, p in in_one_document(chosen, [])] == [1, 4]
    assert in_one_document([], ["lucy"]) == []


def test_names_must_meet_in_one_passage():
    from kenning.answer.judge import names_apart

    quincey = _passage(1, 1, ("Quincey Morris fired at the bat.", 0.9))
    wolf = _passage(2, 2, ("Bersicker the wolf came back in the morning.", 0.9))
    names = ["quincey morris", "bersicker"]
    assert names_apart([quincey, wolf], names) in (["bersicker"], ["quincey morris"])
    both = _passage(3, 3, ("Quincey Morris never saw Bersicker.", 0.1))
    assert names_apart([quincey, wolf, both], names) == []


def test_a_window_s_meaning_is_the_normalised_sum_of_its_sentences():
    import numpy as np

    from kenning.answer.evidence import Sentence, _window_cosines

    basis = {"q": [1.0, 0.0, 0.0], "a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.0, 0.0, 1.0]}
    sentences = [Sentence(t, None, None) for t in "abc"]
    _window_cosines("q", sentences, [(0, 2), (0, 3), (1, 3)], lambda texts: [basis[t] for t in texts])
    assert np.allclose([s.cosine for s in sentences], [1 / np.sqrt(2), 1 / np.sqrt(3), 0.0])


def test_sentences_are_embedded_once_per_process(library, monkeypatch):
    index, _, _ = library
    real = index.embedder()
    embedded: list[str] = []

    class Counting:
        dim = real.dim

        def fingerprint(self):
            return real.fingerprint()

        def embed(self, texts, kind="document"):
            if kind == "document":  # the searches embed their queries; sentences are documents
                embedded.extend(texts)
            return real.embed(texts, kind=kind)

    monkeypatch.setattr(index, "embedder", lambda *a, **k: Counting())
    question = "What did the old man refuse after his son was taken?"
    first = index.answer(question).to_dict()
    assert embedded  # the first answer embeds the gathered sentences
    embedded.clear()
    again = index.answer(question).to_dict()
    assert embedded == [] and again == first  # the second reads them from the cache: same answer


def test_the_frame_of_a_question_is_not_its_topic(library):
    """ "What became of X" asks about X: a sentence that merely holds "became" is no answer."""
    assert without_frame("What became of Petrof Skinsky?") == "Petrof Skinsky?"
    assert without_frame("How old is Seward according to Lucy?") == "How old is Seward to Lucy?"
    assert without_frame("What was her job at the start of the novel?") == "What was her job ?"
    assert without_frame("What does he give her to learn his side of the story?").endswith("of the story?")
    index, _, _ = library
    answer = answer_question(index.answer_sources(), "What became of Captain Leclère?")
    assert answer.found and "Leclère had died" in answer.citations[0].quote
