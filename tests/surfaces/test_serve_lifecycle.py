"""Starting and stopping the long-running commands as a person does: a busy port is one sentence
and exit 2 before anything loads; Ctrl-C ends `kenning watch` with 130 like any interrupted command."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request

import pytest
from locations import REPO

from kenning import Index

CLI = "from kenning.surfaces.cli import main; import sys; sys.exit(main())"


@pytest.fixture
def index_dir(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nRotate the signing keys.\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([tmp_path / "notes"])
    return tmp_path / "ix"


def test_a_busy_port_is_one_sentence_and_exit_2(index_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-c", CLI, "serve", "--index", str(index_dir), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done
    assert done.stderr.strip().splitlines() == [
        f"kenning: error: port {port} on 127.0.0.1 is in use (another kenning serve, or another program): "
        "choose another with --port, or --port 0 for a free one"
    ]
    assert "serving" not in done.stderr


def test_the_serving_line_means_the_address_answers(index_dir, tmp_path):
    """A script may call the server as soon as it says where it serves (`kenning serve & curl ...`):
    the socket listens from then on, and a request waits for the app rather than being refused."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    server = subprocess.Popen(
        [sys.executable, "-c", CLI, "serve", "--index", str(index_dir), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
    )
    try:
        line = server.stderr.readline()
        url = re.search(r"at (http://\S+/) ", line).group(1)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url + "api/status", timeout=30) as reply:  # at once: no wait, no retry
            assert reply.status == 200
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)


def test_ctrl_c_ends_watch_with_130(index_dir):
    watched = index_dir.parent / "notes"
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "watch", str(watched), "--index", str(index_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as in a terminal: a suite started in the background (`pytest &` in a script) passes its
        # children SIGINT ignored, and Python then never raises KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 120
    line = ""
    while "watching" not in line and time.time() < deadline and process.poll() is None:
        line = process.stderr.readline()
    assert "watching" in line, line
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err


def test_an_all_extra_offers_every_optional_part():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["all"] == ["kenning[postgres,llm,sentence-transformers]"]
    assert {"postgres", "llm", "sentence-transformers"} <= set(extras)
