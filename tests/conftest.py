"""Shared fixtures: a real `kenning serve` app on uvicorn, in a thread, on a free port."""

import socket
import threading
import time

import pytest


@pytest.fixture(scope="session", autouse=True)
def _model_cache(tmp_path_factory):
    """Prepared model files (kenning.models.embed.prepared) go to a folder of the test run, not the
    user's cache; processes the tests start inherit it."""
    import os

    os.environ["KENNING_MODEL_CACHE"] = str(tmp_path_factory.mktemp("model-cache"))


@pytest.fixture
def http_server():
    """http_server(index_dir, **options) -> base URL of a running server; stopped after the test."""
    import uvicorn

    from kenning.surfaces.cli import main as cli_main
    from kenning.surfaces.http_app import create_app
    from kenning.surfaces.service import Service

    running = []

    def start(index_dir, allow_write=False, token=None, local_token="local-secret"):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        service = Service(index_dir, allow_write=allow_write)
        app = create_app(service, "127.0.0.1", port, token, local_token, run_command=cli_main)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.time() + 20
        while not server.started and time.time() < deadline:
            time.sleep(0.02)
        assert server.started, "the server did not start"
        running.append((server, thread, service))
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread, service in running:
        server.should_exit = True
        thread.join(timeout=10)
        service.close()


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL 18 + pgvector for the session (tests/pg_server.py), or $KENNING_TEST_PG_URL."""
    from pg_server import start_server

    server = start_server()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server):
    """A fresh index (its own schema) on the test server."""
    return pg_server.url()


def pytest_terminal_summary(terminalreporter):
    """Say how many tests were skipped, and why, even when none was: CI's log must show it (pytest's
    own summary names skips only when there are some)."""
    skipped = terminalreporter.stats.get("skipped", [])
    terminalreporter.write_line(f"tests skipped: {len(skipped)}")
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        terminalreporter.write_line(f"  {report.nodeid}: {reason}")
