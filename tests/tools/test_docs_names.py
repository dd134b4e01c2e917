"""Every `kenning.x.y` a docstring, a comment, a benchmark or a page of the docs names exists: a reader who
follows a name must find it (modules move; their mentions have to move with them)."""

import importlib
import re

from locations import REPO as ROOT

NAME = re.compile(r"\bkenning(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
NOT_MODULES = {"kenning.toml", "kenning.x"}  # a file name, and the docstring's placeholder


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attribute in parts[i:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_kenning_name_in_the_code_and_docs_exists():
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    files += [*(ROOT / "benchmarks").rglob("*.py"), ROOT / "benchmarks" / "README.md"]
    missing = {}
    for path in files:
        for match in NAME.finditer(path.read_text(errors="replace")):
            name = match.group(0)
            if name not in NOT_MODULES and not _resolves(name):
                missing.setdefault(name, path.relative_to(ROOT).as_posix())
    assert not missing, missing


def test_every_test_file_the_code_and_docs_name_exists():
    """A mention such as `tests/store/test_store_contract.py` must lead to that file."""
    named = re.compile(r"\btests/[\w/]+\.py\b")
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "src").rglob("*.c"), *(ROOT / "docs").glob("*.md")]
    files += [ROOT / "README.md", *(ROOT / "benchmarks").rglob("*.py"), ROOT / "benchmarks" / "README.md"]
    files += [*(ROOT / "scripts").iterdir(), *(ROOT / "tests").rglob("*.py")]
    missing = {
        name: path.relative_to(ROOT).as_posix()
        for path in files
        if path.is_file()
        for name in named.findall(path.read_text(errors="replace"))
        if not (ROOT / name).is_file()
    }
    assert not missing, missing
