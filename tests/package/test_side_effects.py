"""A program that imports kenning keeps its process as it was: importing the package, loading its public
names and building and searching an index change none of the environment, logging, warnings filters,
signal handlers, working directory or the BLAS libraries' thread counts. The probe runs in a fresh
interpreter, so nothing this test run did before can hide a change."""

import json
import os
import subprocess
import sys

BLAS_THREADS = (
    "import numpy, threadpoolctl; "
    "print(max(i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'))"
)
PROBE = r"""
import json, logging, os, signal, socket, sys, tempfile, warnings
from pathlib import Path


def state():
    loggers = [logging.getLogger(), *(
        v for v in logging.Logger.manager.loggerDict.values() if isinstance(v, logging.Logger)
    )]
    return {
        "environ": dict(os.environ),
        "cwd": os.getcwd(),
        "root level": logging.getLogger().level,
        "handlers": sorted(f"{lg.name}: {type(h).__name__}" for lg in loggers for h in lg.handlers),
        "disabled": logging.root.manager.disable,
        "warnings filters": [repr(f) for f in warnings.filters],
        "signals": {
            s.name: repr(signal.getsignal(s)) for s in signal.valid_signals() if isinstance(s, signal.Signals)
        },
        "excepthook": repr(sys.excepthook),
        "recursion limit": sys.getrecursionlimit(),
        "socket timeout": socket.getdefaulttimeout(),
    }


def blas_threads():
    from threadpoolctl import threadpool_info  # (its import sets an environment variable: after state())

    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def changed(before, after):
    out = {}
    for key in before:
        if before[key] != after[key]:
            if isinstance(before[key], dict):
                keys = set(before[key]) | set(after[key])
                out[key] = {k: (before[key].get(k), after[key].get(k)) for k in keys
                            if before[key].get(k) != after[key].get(k)}
            else:
                out[key] = (before[key], after[key])
    return out


import numpy  # noqa: E402,F401  (numpy's import adds warnings filters of its own: a host has them anyway)

report = {}
start = state()
import kenning  # noqa: E402

report["import kenning"] = changed(start, state())
for name in kenning.__all__:
    getattr(kenning, name)
from kenning import Index  # noqa: E402

report["public names"] = changed(start, state())
root = Path(tempfile.mkdtemp())
(root / "notes").mkdir()
(root / "notes" / "keys.md").write_text("# Keys\n\nRotate the signing keys every quarter.\n")
(root / "notes" / "backup.md").write_text("# Backups\n\nRestore the nightly backup from cold storage.\n")
with Index(root / "ix") as ix:
    ix.add([root / "notes"])
    ix.embed()
    hits = [ix.search("how often are keys rotated", mode=m).hits for m in ("dense", "hybrid")]
assert all(h and h[0].path.endswith("keys.md") for h in hits), hits
report["index and search"] = changed(start, state())
alone = int(sys.argv[1])  # what numpy takes in a process without kenning
report["blas threads"] = {} if blas_threads() == alone else {"numpy alone": alone, "here": blas_threads()}
print(json.dumps(report))
"""


def test_importing_and_searching_change_nothing_in_the_host_process():
    """Run with no *_NUM_THREADS variable set, so numpy's BLAS takes its own default; after a search
    it still has that many threads (kenning's products ran on one, in a block that restored them)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    alone = subprocess.run(
        [sys.executable, "-c", BLAS_THREADS], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    done = subprocess.run(
        [sys.executable, "-c", PROBE, alone], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "import kenning": {},
        "public names": {},
        "index and search": {},
        "blas threads": {},
    }
