"""The command line's client of a warm `kenning serve`, in the standard library only.

When a server is serving the index a command would open (it announces itself in this user's private
runtime folder, kenning.surfaces.announce, never in the index folder, which anyone may have written),
`search`, `get`, `multi-get` and `status` run inside it: the index, the vectors and the embedding
model are already loaded, so the answer comes back without the engine's start-up. The server runs the
very same command code with the client's folder, search settings and terminal, so the output is
the same.

What crosses is a whitelist: the search settings the server names in its announcement (KENNING_K1,
KENNING_MODE, ...; the server computes them from kenning.api.settings.search_keys, which this
module cannot import without loading the engine) and the terminal's NO_COLOR, TERM and COLUMNS,
never a variable whose name says it holds a key, token, secret, password or credential. Model
addresses, the user config, the store and the index stay here: the server is the user's own and
uses its own environment for those, keys included.

The reply is trusted only as far as this module checks it: an exit status of 0 to 255 and two
strings, else the command runs here. The text itself is printed as it comes: it was produced by the
same command code as a local run (which makes every control character from an index or a document
visible, kenning.surfaces.render), in a process proven to be this user's own kenning server
(kenning.surfaces.announce), so it is as safe as that code's own output.

No server, or a server that does not answer as one: the command runs here as usual.
KENNING_NO_SERVER=1 never forwards.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

from kenning.places.locate import locate_index
from kenning.surfaces.announce import read_announcement

FORWARDED = ("search", "get", "multi-get", "status")
CLIENT_ENV = ("NO_COLOR", "TERM", "COLUMNS")
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
MAX_REPLY = 64 * 1024 * 1024  # a forwarded command's output is bounded by the command; this by us


def server_for(index_dir: Path) -> dict | None:
    """The live server of an index folder, from its announcement (None when none is running)."""
    return read_announcement(index_dir)


def forwarded_env(settings, environ=os.environ) -> dict:
    """The variables of `environ` a forwarded command takes: the named search `settings` and the
    terminal's, never one whose name says it holds a secret."""
    allowed = {*settings, *CLIENT_ENV}
    return {
        k: v
        for k, v in environ.items()
        if k in allowed and isinstance(v, str) and not any(w in k.upper() for w in SECRET_WORDS)
    }


def forward(argv: list[str]) -> int | None:
    """Run the command in a warm server and return its exit status; None to run it here."""
    if not argv or argv[0] not in FORWARDED or os.environ.get("KENNING_NO_SERVER"):
        return None
    if any(a in ("-h", "--help") for a in argv):
        return None
    flag = _flag_value(argv, "--index") or _flag_value(argv, "--store")
    if "--store" in argv or str(flag or "").startswith("postgres") or (not flag and _store_configured()):
        return None  # a server store has no folder for a warm server to announce itself in
    index_dir = locate_index(flag).absolute()
    info = server_for(index_dir)
    if info is None:
        return None
    env = forwarded_env(info["settings"])
    body = {
        "argv": [*_without_flag(argv, "--index"), "--index", str(index_dir)],
        "cwd": os.getcwd(),
        "env": env,
        "tty": sys.stdout.isatty(),
    }
    try:
        answer = _post_json(info["url"], "/api/cli", body, info["local_token"])
    except (OSError, ValueError, RecursionError):
        return None  # a server that does not answer is no server: run the command here
    code, out, err = (
        (answer.get(k) for k in ("code", "stdout", "stderr")) if isinstance(answer, dict) else [None] * 3
    )
    if not (isinstance(code, int) and 0 <= code <= 255 and isinstance(out, str) and isinstance(err, str)):
        return None  # not an answer a kenning server gives: run the command here
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    sys.stderr.write(err)
    return code


def _flag_value(argv: list[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def _without_flag(argv: list[str], flag: str) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == flag:
            skip = True
        elif not arg.startswith(flag + "="):
            out.append(arg)
    return out


def _post_json(url: str, path: str, body: dict, token: str, timeout: float = 120.0) -> dict:
    """POST JSON to the local server over a plain socket: http.client and urllib cost more to import
    (20 ms) than the whole forwarded search takes to answer."""
    parts = urlsplit(url)
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as conn:
        conn.sendall(head.encode() + data)
        chunks = []
        received = 0
        while chunk := conn.recv(65536):
            chunks.append(chunk)
            received += len(chunk)
            if received > MAX_REPLY:
                raise ValueError("the server's answer is too large")
    raw = b"".join(chunks)
    header, _, payload = raw.partition(b"\r\n\r\n")
    status = header.split(b" ", 2)[1] if header.startswith(b"HTTP/") else b"0"
    if status != b"200":
        raise ValueError(f"the server answered {status.decode(errors='replace')}")
    if b"transfer-encoding: chunked" in header.lower():
        payload = _unchunk(payload)
    return json.loads(payload)


def _unchunk(payload: bytes) -> bytes:
    out, rest = [], payload
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def _store_configured() -> bool:
    """Whether $KENNING_STORE or the user config names a server store (kenning.api.settings)."""
    if os.environ.get("KENNING_STORE", "").strip():
        return True
    from kenning.api.settings import ConfigError, user_store

    try:
        return user_store() is not None
    except ConfigError:
        return True  # let the command itself report the broken config
