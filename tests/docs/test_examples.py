"""The guide's examples run, and print what the pages say they print, so they cannot rot.

Every page of docs/ with ```console or ```python blocks is one test, run in a fresh folder:

- ```console: each `$ COMMAND` runs in bash there, `kenning` being `sys.executable -m kenning` and
  `python3` being `sys.executable` (scripts put first on PATH); the lines under it, up to the next
  `$`, are what it prints (stdout and stderr together, as a terminal shows them), and it must exit 0.
  A command ending in `&` starts in the background: the test waits for its first line of output (what
  the page shows under it) and stops it when the page is done.
- ```python: the page's blocks run in order in one namespace; a ```text block right after one (blank
  lines between at most) is what it prints.

Printed text is compared as doctest compares it, with ELLIPSIS and NORMALIZE_WHITESPACE: `...`
stands for what varies (times, dates, absolute paths). A port a page's server is started on
(`--port N`) is replaced by a free one throughout the page. The XDG folders point into the test's
folder and no KENNING_ variable is passed on (but the test run's model cache), so a page runs apart
from the user's own servers, state and settings.
"""

from __future__ import annotations

import doctest
import io
import os
import queue
import re
import shlex
import socket
import subprocess
import sys
import threading
from contextlib import redirect_stdout
from dataclasses import dataclass

import pytest
from locations import REPO

DOCS = REPO / "docs"
SURFACES = {"python.md", "cli.md", "http.md", "mcp.md"}  # each must have examples that run
FENCE = re.compile(r"^```(\w*)\s*$")
CHECK = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass
class Block:
    kind: str  # "console", "python", "text", ...
    text: str
    line: int  # the page's line (from 1) of the block's first line
    gap: bool = False  # text between this block and the one before it


def blocks(page: str) -> list[Block]:
    out, lines, i, last_end = [], page.splitlines(), 0, 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        gap = any(line.strip() for line in lines[last_end:i])
        out.append(Block(opened.group(1), "\n".join(lines[i + 1 : end]) + "\n", i + 2, gap))
        i = last_end = end + 1
    return out


def runnable_pages() -> list[str]:
    return sorted(
        p.name
        for p in DOCS.glob("*.md")
        if any(b.kind in ("console", "python") for b in blocks(p.read_text()))
    )


def steps(page: str) -> list[tuple[str, Block, str | None]]:
    """(kind, block, expected output) for each command and each python block, in page order."""
    found, listed = [], blocks(page)
    for n, block in enumerate(listed):
        if block.kind == "python":
            after = listed[n + 1] if n + 1 < len(listed) else None
            shown = after.text if after and after.kind == "text" and not after.gap else None
            found.append(("python", block, shown))
        elif block.kind == "console":
            for command, shown in commands(block.text):
                found.append(("console", Block("console", command, block.line), shown))
    return found


def commands(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"console block: output before any command: {line!r}")
    return [
        (c, "\n".join(shown).strip("\n") + "\n" if any(s.strip() for s in shown) else "") for c, shown in out
    ]


def free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def same(shown: str, printed: str) -> bool:
    return doctest.OutputChecker().check_output(shown, printed, CHECK)


class Background:
    """Commands started with `&`, stopped when the page is done."""

    def __init__(self):
        self.running: list[subprocess.Popen] = []

    def start(self, command: str, folder, env) -> str:
        process = subprocess.Popen(
            ["bash", "-c", "exec " + command],
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.running.append(process)
        lines: queue.Queue = queue.Queue()

        def read():  # the first line for the page, the rest read and dropped (a full pipe would block it)
            lines.put(process.stdout.readline())
            for _ in process.stdout:
                pass

        threading.Thread(target=read, daemon=True).start()
        try:
            first = lines.get(timeout=120)
        except queue.Empty:
            raise AssertionError(f"{command!r} printed nothing in 120 s") from None
        assert first, f"{command!r} ended without a word (exit {process.wait()})"
        return first

    def stop(self) -> None:
        for process in self.running:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def scripts(folder) -> str:
    """A folder for PATH whose `kenning` runs this interpreter's kenning (and `python3` this
    interpreter). PYTHONPATH is written in, made absolute: an MCP client starts its server with a bare
    environment, and the page runs in another folder."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    given = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    path = os.pathsep.join(os.path.abspath(p) for p in given if p)
    prefix = f"PYTHONPATH={shlex.quote(path)} " if path else ""
    (bin_dir / "kenning").write_text(
        f'#!/bin/sh\n{prefix}exec {shlex.quote(sys.executable)} -m kenning "$@"\n'
    )
    (bin_dir / "kenning").chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    return str(bin_dir)


@pytest.mark.parametrize("name", runnable_pages())
def test_the_page_runs_as_written(name, tmp_path, monkeypatch):
    page = (DOCS / name).read_text()
    for port in sorted(set(re.findall(r"--port (\d+)", page))):
        page = re.sub(rf"\b{port}\b", free_port(), page)
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.setenv("PATH", scripts(tmp_path) + os.pathsep + os.environ["PATH"])
    monkeypatch.chdir(folder)
    for var in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        (tmp_path / var).mkdir(mode=0o700)
        monkeypatch.setenv(var, str(tmp_path / var))
    for var in [v for v in os.environ if v.startswith("KENNING_") and v != "KENNING_MODEL_CACHE"]:
        monkeypatch.delenv(var)  # the user's own settings would change what the pages print
    namespace: dict = {"__name__": "__main__"}
    background = Background()
    ran = 0
    try:
        for kind, block, shown in steps(page):
            where = f"{name}:{block.line}"
            if kind == "python":
                printed = io.StringIO()
                with redirect_stdout(printed):
                    exec(compile(block.text, where, "exec"), namespace)
                printed = printed.getvalue()
            elif block.text.rstrip().endswith("&"):  # what the page shows is its first line
                printed = background.start(block.text.rstrip()[:-1], folder, dict(os.environ))
            else:
                done = subprocess.run(
                    ["bash", "-c", block.text],
                    cwd=folder,
                    env=dict(os.environ),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=300,
                )
                printed = done.stdout
                assert done.returncode == 0, f"{where}: `{block.text}` exited {done.returncode}:\n{printed}"
            ran += 1
            if shown is not None:
                assert same(shown, printed), f"{where}: printed\n{printed}\nthe page shows\n{shown}"
    finally:
        background.stop()
    assert ran


def test_every_surface_has_examples_that_run():
    assert SURFACES <= set(runnable_pages())
