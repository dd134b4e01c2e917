"""The life of `kenning serve`: refuse an unsafe address, warm the index, announce the server in the
index folder (serve.json, for the command line's client), serve, and clean up."""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import socket
import sys
import threading
from pathlib import Path

from kenning.locate import SERVER_FILE
from kenning.store import StorageError, is_server_url

TOKEN_ENV = "KENNING_SERVE_TOKEN"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_server(
    index_dir: Path,
    host: str,
    port: int,
    allow_write: bool,
    watch: list[str] | None,
    quiet: bool = False,
) -> int:
    import uvicorn

    from kenning.surfaces.http_app import create_app
    from kenning.surfaces.service import Service

    token = os.environ.get(TOKEN_ENV, "").strip() or None
    if not is_loopback(host) and not token:
        raise StorageError(
            f"--host {host} lets other machines in: set {TOKEN_ENV} to a secret first; every request "
            "must then send it as `Authorization: Bearer TOKEN`"
        )
    # a folder index announces the server in it (kenning.surfaces.client forwards commands there);
    # a server store has no folder, so commands on it always run in their own process
    server_store = is_server_url(index_dir)
    index_dir = index_dir if server_store else Path(index_dir).absolute()
    service = Service(index_dir, allow_write=allow_write)
    service.warm_up()
    if port == 0:
        with socket.socket() as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
    local_token = secrets.token_urlsafe(32)
    app = create_app(service, host, port, token, local_token)
    announce = None if server_store else index_dir / SERVER_FILE
    watcher = None
    if watch:
        from kenning.surfaces.watch import Watcher

        watcher = Watcher(service, watch)
        threading.Thread(target=watcher.run, daemon=True, name="kenning-watch").start()
    if announce is not None:
        _write_private(
            announce,
            {"pid": os.getpid(), "url": f"http://{_url_host(host)}:{port}", "local_token": local_token},
        )
    if not quiet:
        print(
            f"kenning: serving {service.index.location} at http://{_url_host(host)}:{port}/ (MCP at /mcp)",
            file=sys.stderr,
        )
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        if watcher is not None:
            watcher.stop()
        try:
            if announce is not None and json.loads(announce.read_text()).get("pid") == os.getpid():
                announce.unlink()
        except (OSError, ValueError):
            pass
        service.close()
    return 0


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _write_private(path: Path, data: dict) -> None:
    """Readable by this user only: it holds the token that lets the command line in."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh)
