"""Chat models for answers (and the chat reranker): OpenAI-compatible, Ollama, or a local GGUF file.

Specs, given by the user (flag, environment, or the user's config; never an index, see
kenning.models.endpoints):

    openai:MODEL@BASE_URL      POST BASE_URL/chat/completions, key from KENNING_LLM_API_KEY or OPENAI_API_KEY
    ollama:MODEL@BASE_URL      POST BASE_URL/api/chat with an explicit context size (options.num_ctx)
    llama-cpp:/path/model.gguf a local model through the optional llama-cpp-python package

The base URL may be left out (openai:gpt-4o-mini): it then comes from KENNING_OPENAI_URL /
OPENAI_BASE_URL, KENNING_OLLAMA_URL / OLLAMA_HOST, or the user's config file. `KENNING_LLM` gives
the spec when no flag does.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

from kenning.models.endpoints import user_endpoint
from kenning.models.specs import split_model_url
from kenning.models.transport import opener

DEFAULT_TIMEOUT = 120.0
DEFAULT_NUM_CTX = 16384  # Ollama truncates silently past its default context: always say how much
KINDS = ("openai", "ollama", "llama-cpp")


class ChatError(Exception):
    """A chat model that cannot be built or did not answer; the message names the URL, never the key."""


def post_chat(
    url: str, payload: dict, api_key: str | None, timeout: float, where: str, error=ChatError
) -> dict:
    """POST a JSON chat request and return the decoded JSON answer; `error` is raised on failure."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(url, json.dumps(payload).encode("utf-8"), headers, method="POST")
    try:
        with opener().open(req, timeout=timeout) as resp:  # redirects refused: they would carry the key
            body = resp.read()
    except urllib.error.HTTPError as e:
        detail = e.read(300).decode("utf-8", "replace").strip()
        raise error(f"{where} answered HTTP {e.code} {e.reason}: {detail[:200]}") from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, TimeoutError):
            raise error(f"{where} did not answer within {timeout:g}s") from None
        raise error(f"cannot reach {where}: {e.reason}") from None
    except TimeoutError:
        raise error(f"{where} did not answer within {timeout:g}s") from None
    except OSError as e:
        raise error(f"{where} failed: {e}") from None
    try:
        return json.loads(body)
    except ValueError:
        snippet = body[:80].decode("utf-8", "replace")
        raise error(f"{where} did not answer with JSON: {snippet!r}") from None


def message_content(data: dict, kind: str, where: str, error=ChatError) -> str:
    """The assistant's text from an OpenAI-style or Ollama-style answer."""
    try:
        content = data["choices"][0]["message"]["content"] if kind == "openai" else data["message"]["content"]
    except (KeyError, IndexError, TypeError):
        field = "choices[0].message.content" if kind == "openai" else "message.content"
        raise error(f"{where} answered JSON without {field}: {str(data)[:120]}") from None
    return content if isinstance(content, str) else json.dumps(content)


class ChatModel:
    """One configured chat model: `complete(messages)` returns the assistant's text."""

    def __init__(self, spec: str, timeout: float = DEFAULT_TIMEOUT, num_ctx: int = DEFAULT_NUM_CTX):
        kind, sep, rest = spec.strip().partition(":")
        kind = kind.lower()
        if not sep or kind not in KINDS or not rest.strip():
            raise ChatError(
                f"unknown LLM spec {spec!r}: use openai:MODEL@BASE_URL, ollama:MODEL@BASE_URL "
                "or llama-cpp:/path/model.gguf"
            )
        self.kind, self.timeout, self.num_ctx = kind, timeout, num_ctx
        self._llama = None
        if kind == "llama-cpp":
            self.model, self.path = Path(rest).name, Path(rest).expanduser()
            if not self.path.is_file():
                raise ChatError(f"llama-cpp model {self.path} is not a file")
            self.name = f"llama-cpp:{self.path.name}"
            return
        try:
            model, url = split_model_url(rest.strip(), kind)
        except ValueError as exc:
            raise ChatError(f"{kind} spec {rest!r}: {exc}") from None
        url = url or user_endpoint(kind)
        if not url:
            raise ChatError(
                f"no address for {kind} model {model!r}: give {kind}:{model}@URL, set the endpoint in the "
                "environment, or add it to [endpoints] in the user config"
            )
        self.model, self.base_url = model, url.rstrip("/")
        self.url = self.base_url + ("/chat/completions" if kind == "openai" else "/api/chat")
        self.name = f"{kind}:{model}"
        key = os.environ.get("KENNING_LLM_API_KEY")
        self.api_key = key or (os.environ.get("OPENAI_API_KEY") if kind == "openai" else None)

    def complete(self, messages: list[dict], max_tokens: int = 512) -> str:
        if self.kind == "llama-cpp":
            return self._complete_locally(messages, max_tokens)
        if self.kind == "openai":
            payload = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": max_tokens}
        else:
            payload = {
                "model": self.model,
                "messages": messages,
                "stream": False,
                "options": {"temperature": 0, "num_ctx": self.num_ctx, "num_predict": max_tokens},
            }
        where = f"{self.name} at {self.url}"
        return message_content(
            post_chat(self.url, payload, self.api_key, self.timeout, where), self.kind, where
        )

    def _complete_locally(self, messages: list[dict], max_tokens: int) -> str:
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ChatError(
                    "llama-cpp models need the optional llama-cpp-python package: pip install 'kenning[llm]'"
                ) from None
            self._llama = Llama(model_path=str(self.path), n_ctx=min(self.num_ctx, 8192), verbose=False)
        out = self._llama.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=0)
        return out["choices"][0]["message"]["content"] or ""


def make_chat_model(spec: str | None) -> ChatModel | None:
    """The user's chat model: the spec given, else $KENNING_LLM, else None (extractive answers)."""
    spec = spec or os.environ.get("KENNING_LLM", "").strip() or None
    if spec is None or spec.lower() in ("none", "off", "extractive"):
        return None
    return ChatModel(spec)
