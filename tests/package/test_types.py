"""The public API is fully annotated: `python -m mypy` checks the public modules in strict mode (the
files and settings are pyproject.toml's [tool.mypy]), with typed_usage.py, a user's code that sees
each public name's own type. Any mypy error fails the test with mypy's output."""

import importlib
import importlib.util
import inspect
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from locations import REPO

import kenning

CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]


def test_the_public_modules_pass_mypy_strict():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("the type check needs mypy (the test extras: pip install -e '.[test]')")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("Success: no issues found"), checked.stdout


def test_every_public_name_is_defined_in_a_checked_module():
    assert CONFIG["strict"] is True and CONFIG["follow_imports"] == "silent"
    checked = [REPO / entry for entry in CONFIG["files"]]
    for name in kenning.__all__:
        value = getattr(kenning, name)
        if inspect.ismodule(value):
            module = value
        elif inspect.isclass(value) or inspect.isfunction(value):
            module = importlib.import_module(value.__module__)
        else:  # __version__
            module = kenning
        where = Path(inspect.getfile(module)).resolve()
        assert any(where == path or path in where.parents for path in checked), (name, where)
