"""A canary listener on loopback: it records every request that reaches it (method, path, headers,
body) and answers like an OpenAI-compatible embeddings server, so that a leak is seen, not hidden
behind a connection error. Security tests plant its address wherever an attacker could (an index's
rows, serve.json, a redirect) and assert it heard nothing."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Canary:
    def __init__(self, redirect_to: str | None = None, dim: int = 384):
        self.requests: list[dict] = []
        self.redirect_to = redirect_to
        self.reply = None  # a JSON value to answer every POST with, instead of the default
        canary = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _record(self):
                length = min(int(self.headers.get("Content-Length") or 0), 10_000_000)
                body = self.rfile.read(length) if length else b""
                canary.requests.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
                )
                return body

            def _reply(self, status: int, payload: bytes, extra: dict | None = None):
                self.send_response(status)
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):
                self._record()
                if canary.redirect_to:
                    return self._reply(302, b"{}", {"Location": canary.redirect_to + self.path})
                self._reply(200, b'{"code": 0, "stdout": "", "stderr": ""}')

            def do_POST(self):
                body = self._record()
                if canary.redirect_to:
                    return self._reply(302, b"{}", {"Location": canary.redirect_to + self.path})
                if canary.reply is not None:
                    return self._reply(200, json.dumps(canary.reply).encode())
                try:
                    texts = json.loads(body).get("input") or []
                except (ValueError, AttributeError):
                    texts = []
                if isinstance(texts, str):
                    texts = [texts]
                data = [{"index": i, "embedding": [1.0] + [0.0] * (dim - 1)} for i in range(len(texts))]
                payload = {"data": data, "code": 0, "stdout": "\x1b]0;pwned\x07owned\n", "stderr": ""}
                self._reply(200, json.dumps(payload).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> Canary:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def heard(self) -> str:
        """What reached it, for an assertion message."""
        return "; ".join(
            f"{r['method']} {r['path']} {r['headers'].get('Authorization', '')}" for r in self.requests
        )
