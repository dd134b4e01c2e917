"""The wheel holds what an installed kenning reads besides its modules: the PEP 561 marker `py.typed`
(type checkers use kenning's annotations), the tokenizer data and the web page's files."""

import shutil
import subprocess
import sys
import zipfile

from locations import REPO


def test_the_wheel_ships_py_typed_and_the_package_data(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info")
    )
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    built = subprocess.run(
        [*pip, "-w", str(tmp_path / "out"), str(source)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "out").glob("kenning-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kenning/py.typed" in names
    assert "kenning/__main__.py" in names
    assert any(n.startswith("kenning/models/embed/data/") for n in names)
    assert any(n.startswith("kenning/surfaces/web/") for n in names)
