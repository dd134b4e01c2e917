"""The life of `kenning serve`: refuse an unsafe address, warm the index, announce the server in this
user's private runtime folder (kenning.surfaces.announce, for the command line's client), serve,
and clean up."""

from __future__ import annotations

import errno
import ipaddress
import os
import secrets
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from kenning.store import StorageError, is_server_url
from kenning.surfaces.announce import remove_announcement, write_announcement
from kenning.surfaces.terminal import visible

TOKEN_ENV = "KENNING_SERVE_TOKEN"
LISTEN_BACKLOG = 2048  # uvicorn's own default


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
    allowed_hosts: list[str] | None = None,
    run_command: Callable[..., int] | None = None,
) -> int:
    """Serve the index until stopped. `run_command`: the command line's `main`, which runs the
    commands a `kenning` process forwards here (kenning.surfaces.client); None runs none."""
    import uvicorn

    from kenning.surfaces.http_app import allowed_host_names, create_app, forwarded_settings
    from kenning.surfaces.service import Service

    token = os.environ.get(TOKEN_ENV, "").strip() or None
    if not is_loopback(host) and not token:
        raise StorageError(
            f"--host {host} lets other machines in: set {TOKEN_ENV} to a secret first; every request "
            "must then send it as `Authorization: Bearer TOKEN`"
        )
    try:
        allowed_host_names(allowed_hosts or ())
    except ValueError as exc:
        raise StorageError(str(exc)) from None
    # a folder index's server is announced in this user's runtime folder (kenning.surfaces.announce;
    # the command line forwards there); a server store has no folder, so commands on it always run
    # in their own process
    listening = _listen(host, port)  # first: a busy port is said before the model loads
    port = listening.getsockname()[1]
    server_store = is_server_url(index_dir)
    index_dir = index_dir if server_store else Path(index_dir).absolute()
    try:
        service = Service(index_dir, allow_write=allow_write)
    except BaseException:
        listening.close()
        raise
    service.watched = [Path(w).expanduser().absolute() for w in watch or ()]
    trouble = service.warm_up()
    if trouble:
        print(f"kenning: warning: {visible(trouble)}", file=sys.stderr)
    local_token = secrets.token_urlsafe(32)
    app = create_app(
        service, host, port, token, local_token, allowed_hosts=allowed_hosts, run_command=run_command
    )
    announce = not server_store
    watcher = None
    if watch:
        from kenning.surfaces.watch import Watcher

        watcher = Watcher(service, watch)
        threading.Thread(target=watcher.run, daemon=True, name="kenning-watch").start()
    reach = _loopback_for(host)
    if announce and reach:  # the command line forwards over loopback only
        url = f"http://{_url_host(reach)}:{port}"
        settings = forwarded_settings()  # what the command line may send along (kenning.surfaces.client)
        if write_announcement(index_dir, os.getpid(), url, local_token, settings) is None and not quiet:
            print("kenning: no private runtime folder: commands will not be forwarded here", file=sys.stderr)
    if not quiet:
        print(
            f"kenning: serving {service.index.location} at http://{_url_host(host)}:{port}/ (MCP at /mcp)",
            file=sys.stderr,
        )
    try:
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        uvicorn.Server(config).run(sockets=[listening])
    finally:
        if watcher is not None:
            watcher.stop()
        if announce:
            try:
                remove_announcement(index_dir, os.getpid())
            except OSError:
                pass
        service.close()
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound and listening before anything else starts (port 0: a free one), or
    a StorageError in one sentence when the port is taken or the address is not this machine's.
    Listening from here on, a connection made as soon as the server says where it serves waits in
    the queue for the app (which starts a moment later) instead of being refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as exc:
        listening.close()
        if exc.errno == errno.EADDRINUSE:
            raise StorageError(
                f"port {port} on {host} is in use (another kenning serve, or another program): "
                "choose another with --port, or --port 0 for a free one"
            ) from None
        raise StorageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    listening.listen(LISTEN_BACKLOG)
    return listening


def _loopback_for(host: str) -> str | None:
    """The loopback address a server listening on `host` answers at (None: it does not)."""
    if host in ("localhost", "0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host if is_loopback(host) else None


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
