"""A fake OpenAI/Ollama embedding server on loopback, recording every request: the HTTP embedder
tests and the fault tests (servers down, slow, wrong) share it."""

import json
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

DIM = 12
PROXY_VARS = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


def fake_vector(text: str, dim: int = DIM) -> list[float]:
    """Deterministic, deliberately not unit length (the embedder must normalise)."""
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return (rng.normal(size=dim) * 3.0).tolist()


def unit(vector) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


class FakeServer:
    """Answers /embeddings (OpenAI) and /api/embed (Ollama); `mode` switches to failures."""

    def __init__(self):
        self.requests: list[dict] = []
        self.mode = "ok"
        self.dim = DIM
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if server.mode == "drop":  # hang up without an answer
                    self.close_connection = True
                    return
                status, payload = server.answer(self.path, body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def answer(self, path, body):
        texts = body["input"]
        if self.mode == "500":
            return 500, {"error": {"message": "model overloaded", "type": "server_error"}}
        if self.mode == "401":
            return 401, {"error": {"message": "Incorrect API key provided"}}
        if self.mode == "malformed":
            return 200, b'{"data": [ this is not json'
        if self.mode == "wrong-shape":
            return 200, {"result": "ok"}
        if self.mode == "too-few":
            texts = texts[:-1]
        if self.mode == "slow":
            time.sleep(1.0)
        vectors = [fake_vector(t, self.dim) for t in texts]
        if path == "/v1/embeddings":
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            return 200, {
                "object": "list",
                "model": body["model"],
                "data": data[::-1],
            }  # out of order on purpose
        if path == "/api/embed":
            return 200, {"model": body["model"], "embeddings": vectors}
        return 404, {"error": f"no route {path}"}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.thread.is_alive():
            self.httpd.shutdown()
        self.httpd.server_close()
