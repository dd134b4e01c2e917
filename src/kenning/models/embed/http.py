"""Embedders behind an HTTP API, with the standard library only (urllib).

- `OpenAIEmbedder`: any OpenAI-compatible `POST {base}/embeddings` (OpenAI, llama.cpp server, vLLM,
  LM Studio, text-embeddings-inference...). `base` includes the version path, as in the OpenAI SDK's
  `base_url` (default `https://api.openai.com/v1`). Bearer key from `KENNING_EMBED_API_KEY`, else
  `OPENAI_API_KEY`; none is sent when neither is set.
- `OllamaEmbedder`: Ollama's `POST {base}/api/embed` (default base `http://localhost:11434`). A bearer
  key is sent only when `KENNING_EMBED_API_KEY` is set (for an Ollama behind an authenticating proxy).

Texts go in batches (default 64 per request). The dimension is learnt from the first answer and then
checked on every later one. Every failure (HTTP error status, refused connection, timeout, a body that
is not JSON or has the wrong shape) raises EmbedderError naming the backend and the URL. A refused or
dropped connection, HTTP 429 or 5xx is retried with backoff (ATTEMPTS in all) within the timeout, which
is TIMEOUT for documents (KENNING_EMBED_TIMEOUT) and at most QUERY_TIMEOUT for a query.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import numpy as np

from .base import EmbedderError, check_inputs, l2_normalise, make_fingerprint

if TYPE_CHECKING:
    import urllib.error

# What is sent per text: under an 8,192-token window (OpenAI's) for any script, since a token covers
# at least about one character, and the same as the largest chunk kenning makes.
HTTP_MAX_CHARS = 8000
OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
OLLAMA_DEFAULT_BASE = "http://localhost:11434"
BATCH_SIZE = 64
TIMEOUT = 60.0  # seconds for a batch, retries included; KENNING_EMBED_TIMEOUT changes it
QUERY_TIMEOUT = 10.0  # a search waits at most this for its query vector, then answers lexically
ATTEMPTS = 3
BACKOFF = 0.25  # seconds before the second attempt, doubled before each later one
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
KEY_ENV = "KENNING_EMBED_API_KEY"
OPENAI_KEY_ENV = "OPENAI_API_KEY"


class HttpEmbedder:
    """Shared machinery: request building, error reporting, batching, dimension discovery."""

    backend = "http"
    endpoint = ""
    key_envs: tuple[str, ...] = (KEY_ENV,)

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        batch_size: int = BATCH_SIZE,
        timeout: float | None = None,
    ) -> None:
        if not model:
            raise EmbedderError(f"{self.backend} embedder: no model name given")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise EmbedderError(
                f"{self.backend} embedder: base URL must be http(s)://host[:port][/path], not {base_url!r}"
            )
        if "@" in parts.netloc:
            raise EmbedderError(
                f"{self.backend} embedder: no user or password in the base URL "
                f"({parts.scheme}://…@{parts.netloc.rpartition('@')[2]}); put a key in {self.key_envs[0]}"
            )
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + self.endpoint
        self.host = parts.netloc.lower()
        self.dim = 0
        self.batch_size = max(1, int(batch_size))
        self.timeout = _default_timeout() if timeout is None else float(timeout)
        from kenning.models.transport import opener  # urllib loads with an HTTP embedder only

        self._opener = opener()  # proxies from the environment, read once here; redirects refused

    # -- identity ------------------------------------------------------------------------------
    def _fingerprint_parts(self) -> dict:
        return {"host": self.host, "model": self.model, "dim": self.dim}

    def fingerprint(self) -> str:
        """Needs the dimension: if no answer has been seen yet, one text is embedded to learn it."""
        if not self.dim:
            self.embed(["dimension probe"])
        return make_fingerprint(self.backend, self._fingerprint_parts())

    def describe(self) -> dict:
        """Never makes a request: fingerprint is None while the dimension is still unknown."""
        return {
            "backend": self.backend,
            "model": self.model,
            "dim": self.dim,
            "fingerprint": make_fingerprint(self.backend, self._fingerprint_parts()) if self.dim else None,
            "url": self.url,
            "fingerprint_inputs": self._fingerprint_parts(),
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, url={self.url!r})"

    # -- HTTP ----------------------------------------------------------------------------------
    def _api_key(self) -> str | None:
        for name in self.key_envs:
            value = os.environ.get(name, "").strip()
            if value:
                return value
        return None

    def _post(self, payload: dict, budget: float | None = None):
        """POST with retries: a refused connection, a dropped one, HTTP 429 or 5xx is tried again
        after 0.25 s, then 0.5 s, ..., ATTEMPTS times in all, all within `budget` seconds (the timeout)."""
        budget = self.timeout if budget is None else budget
        deadline = time.monotonic() + budget
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return self._post_once(payload, max(0.05, deadline - time.monotonic()), budget)
            except _Transient as exc:
                wait = BACKOFF * 2 ** (attempt - 1)
                if attempt == ATTEMPTS or time.monotonic() + wait >= deadline:
                    tries = f" (tried {attempt} time{'s' if attempt > 1 else ''})"
                    raise EmbedderError(f"{exc}{tries}") from None
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _post_once(self, payload: dict, timeout: float, budget: float):
        import http.client
        import urllib.error
        import urllib.request

        body = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self._api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        where = f"{self.backend} embedder: POST {self.url}"
        try:
            with self._opener.open(request, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            hint = ""
            if exc.code in (401, 403):
                hint = (
                    f" (no API key: set {' or '.join(self.key_envs)})"
                    if key is None
                    else f" (check the key in {' or '.join(self.key_envs)})"
                )
            elif exc.code == 404:
                hint = f" (is {self.model!r} a model this server has, and is the base URL right?)"
            error = _Transient if exc.code in RETRY_STATUSES else EmbedderError
            raise error(f"{where} returned HTTP {exc.code} {exc.reason}{hint}: {detail}") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, ConnectionRefusedError):
                raise _Transient(f"{where}: connection refused (is the server running?)") from None
            if isinstance(reason, TimeoutError):  # socket.timeout is TimeoutError
                raise _Transient(f"{where}: no answer within {budget:g} s") from None
            raise _Transient(f"{where}: cannot connect ({reason})") from None
        except TimeoutError:
            raise _Transient(f"{where}: no answer within {budget:g} s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise _Transient(f"{where}: connection failed ({type(exc).__name__}: {exc})") from None
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EmbedderError(f"{where}: the answer is not valid JSON ({exc}): {_snippet(raw)}") from None

    def _embed_batch(self, texts: list[str], budget: float) -> list:
        raise NotImplementedError

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        # kind is accepted and checked, but no prefix is added: the API embeds the text as given
        texts = check_inputs(self.backend, texts, kind, max_chars=HTTP_MAX_CHARS)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        budget = min(self.timeout, QUERY_TIMEOUT) if kind == "query" else self.timeout
        blocks = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            vectors = self._embed_batch(batch, budget)
            blocks.append(self._to_matrix(vectors, len(batch)))
        return l2_normalise(np.concatenate(blocks, axis=0))

    def _to_matrix(self, vectors: list, expected: int) -> np.ndarray:
        where = f"{self.backend} embedder: POST {self.url}"
        if len(vectors) != expected:
            raise EmbedderError(f"{where}: sent {expected} texts but got {len(vectors)} vectors back")
        try:
            matrix = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbedderError(
                f"{where}: the vectors are not lists of numbers of one length ({exc})"
            ) from None
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbedderError(f"{where}: the vectors are not lists of numbers of one length")
        if not np.isfinite(matrix).all():
            raise EmbedderError(f"{where}: the vectors contain NaN or infinite values")
        if not self.dim:
            self.dim = int(matrix.shape[1])
        elif matrix.shape[1] != self.dim:
            raise EmbedderError(
                f"{where}: got {matrix.shape[1]}-d vectors, earlier answers were {self.dim}-d"
            )
        return matrix


class OpenAIEmbedder(HttpEmbedder):
    """OpenAI-compatible `/embeddings`."""

    backend = "openai"
    endpoint = "/embeddings"
    key_envs = (KEY_ENV, OPENAI_KEY_ENV)

    def __init__(self, model: str, base_url: str | None = None, **kwargs) -> None:
        super().__init__(model, base_url or OPENAI_DEFAULT_BASE, **kwargs)

    def _embed_batch(self, texts: list[str], budget: float) -> list:
        answer = self._post({"model": self.model, "input": texts, "encoding_format": "float"}, budget)
        where = f"{self.backend} embedder: POST {self.url}"
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise EmbedderError(
                f'{where}: expected {{"data": [{{"embedding": [...]}}, ...]}}, got {_snippet(answer)}'
            )
        items = []
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise EmbedderError(f"{where}: data[{position}] has no embedding list: {_snippet(item)}")
            index = item.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool):
                raise EmbedderError(f"{where}: data[{position}].index is not an integer: {_snippet(item)}")
            items.append((index, item["embedding"]))
        items.sort(key=lambda pair: pair[0])  # the API may answer out of order; "index" says where each goes
        if [i for i, _ in items] != list(range(len(items))):
            raise EmbedderError(f"{where}: the data indexes are not 0..{len(items) - 1}")
        return [vector for _, vector in items]


class OllamaEmbedder(HttpEmbedder):
    """Ollama `/api/embed` (Ollama 0.3.4 and later)."""

    backend = "ollama"
    endpoint = "/api/embed"
    key_envs = (KEY_ENV,)

    def __init__(self, model: str, base_url: str | None = None, **kwargs) -> None:
        super().__init__(model, base_url or OLLAMA_DEFAULT_BASE, **kwargs)

    def _embed_batch(self, texts: list[str], budget: float) -> list:
        answer = self._post({"model": self.model, "input": texts, "truncate": True}, budget)
        where = f"{self.backend} embedder: POST {self.url}"
        vectors = answer.get("embeddings") if isinstance(answer, dict) else None
        if not isinstance(vectors, list):
            if isinstance(answer, dict) and "error" in answer:
                raise EmbedderError(f"{where}: server error: {_snippet(answer['error'])}")
            raise EmbedderError(f'{where}: expected {{"embeddings": [[...], ...]}}, got {_snippet(answer)}')
        return vectors


def _snippet(value, limit: int = 200) -> str:
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace")
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """The useful part of an error body: OpenAI's {"error": {"message"}}, Ollama's {"error"}, or the text."""
    try:
        raw = exc.read()
    except Exception:  # the body is best effort only
        return "(no body)"
    if not raw:
        return "(empty body)"
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _snippet(raw)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and "message" in error:
            return _snippet(error["message"])
        if error is not None:
            return _snippet(error)
    return _snippet(body)


def _default_timeout() -> float:
    raw = os.environ.get("KENNING_EMBED_TIMEOUT", "").strip()
    if not raw:
        return TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (0 < value < 86400):
        raise EmbedderError(f"KENNING_EMBED_TIMEOUT must be a number of seconds above 0, not {raw!r}")
    return value


class _Transient(EmbedderError):
    """A failure worth trying again: the server is down, busy, or dropped the connection."""
