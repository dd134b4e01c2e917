"""Every maintained benchmark starts: `--help` imports the script and all it uses (benchmarks/lib, the
kenning modules it names), so a module that moves cannot silently break a tool nobody runs daily."""

import re
import subprocess
import sys

import pytest
from locations import REPO as ROOT

BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_it_starts(script):
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


def test_the_readme_names_every_script_and_no_other():
    readme = (BENCHMARKS / "README.md").read_text()
    named = {word.strip("`") for word in readme.split() if word.strip("`").endswith(".py")}
    assert {s for s in named if "/" not in s} == set(SCRIPTS)


def test_every_benchmark_the_docs_and_code_name_exists():
    named = re.compile(r"benchmarks/([\w/]+\.py)")
    files = [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "src").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
    ]
    missing = {
        f"benchmarks/{name}": path.relative_to(ROOT).as_posix()
        for path in files
        for name in named.findall(path.read_text(errors="replace"))
        if not (BENCHMARKS / name).is_file()
    }
    assert not missing, missing
