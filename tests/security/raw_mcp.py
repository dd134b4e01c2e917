"""Raw JSON-RPC over a `kenning mcp` process's stdio, as any MCP client may write it (the SDK's own
client cannot send some of what security tests need, such as a lone surrogate)."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time

HELLO = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def call(n: int, tool: str, arguments: dict) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def exchange(command: list[str], calls: list[dict | str], timeout: float = 120, **popen) -> dict[int, dict]:
    """Send the handshake and `calls` (with ASCII escapes, so "\\ud800" travels as written; a string
    is sent as the raw line it is, and waited for by no id), keep stdin open until every call is
    answered or `timeout` passes, and return the answers by id."""
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen
    )
    wanted = {m["id"] for m in [*HELLO, *calls] if isinstance(m, dict) and "id" in m}
    answers: dict[int, dict] = {}
    try:
        lines = [m if isinstance(m, str) else json.dumps(m, ensure_ascii=True) for m in [*HELLO, *calls]]
        proc.stdin.write("".join(line + "\n" for line in lines).encode())
        proc.stdin.flush()
        chooser = selectors.DefaultSelector()
        chooser.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.time() + timeout
        pending = b""  # read straight from the pipe: a buffered readline could hold the next answer
        # where select no longer sees it, and wait out the deadline for it
        while set(answers) < wanted and time.time() < deadline:
            if chooser.select(timeout=max(0.0, deadline - time.time())):
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if "id" in message:
                        answers[message["id"]] = message
    finally:
        proc.kill()
        _, err = proc.communicate()
    answers[-1] = {"stderr": err.decode(errors="replace")}
    return answers
