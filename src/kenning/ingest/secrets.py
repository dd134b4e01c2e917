"""Credentials recognised by what a file says, not only by its name.

Names catch the usual credential files (kenning.ingest.walk's SECRET_PATTERNS); this catches the rest:
a private key saved as `deploy_key.txt`, a certificate bundle holding its key, a cloud service
account's JSON, a token pasted into `config.yml`. The rules are the high-confidence ones of
gitleaks and detect-secrets (fixed prefixes and lengths that ordinary prose never has), so ordinary
documents do not match them.

What happens to a match, unless the user indexes with --include-secrets:

- a file that IS a credential (a private key block, a cloud service account, a credential store's
  key lines) is skipped whole, named in the run's summary with the kind of credential;
- a token inside an ordinary document (an API key in a config or a note) is replaced by
  `[redacted KIND]`, and the rest of the document is indexed; the summary names the file and kinds.

The secret itself is never printed, stored or logged. The check is a handful of `in` tests (the
rules' gates) over text already read; a rule's regular expression runs only on text that holds its
gate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import NamedTuple


class Rule(NamedTuple):
    kind: str  # what the summary calls it: "private key", "github token"
    gate: str  # literal text every match holds: the rule runs only on text that holds it
    pattern: re.Pattern
    whole_file: bool  # True: the file is a credential, skipped; False: the match is redacted


def _rule(kind: str, gate: str, pattern: str, whole_file: bool = False) -> Rule:
    return Rule(kind, gate, re.compile(pattern), whole_file)


def _credential(kind: str, gate: str, pattern: str) -> Rule:
    """A rule whose match makes the whole file a credential."""
    return _rule(kind, gate, pattern, whole_file=True)


# Rules share a few gates ("_" for the tokens whose fixed prefix holds one), so that ordinary prose,
# which holds none of them, costs a handful of `in` tests and no regular expression.
RULES = (
    # files that are credentials: skipped whole
    _credential("private key", "PRIVATE KEY", r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"),
    _credential("cloud service account", "_", r'"type"\s*:\s*"service_account"'),
    _credential("kubernetes client key", "client-key-data", r"client-key-data:\s*[A-Za-z0-9+/=]{20,}"),
    _credential("aws secret key", "_", r"(?i)aws_secret_access_key\s*[=:]\s*[\"']?[A-Za-z0-9/+=]{40}"),
    _credential("netrc password", "password", r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+\S+"),
    # tokens inside ordinary text: redacted
    _rule("aws access key id", "AKIA", r"\bAKIA[0-9A-Z]{16}\b"),
    _rule("aws access key id", "ASIA", r"\bASIA[0-9A-Z]{16}\b"),
    _rule("github token", "_", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b"),
    _rule("github token", "_", r"\bgithub_pat_[A-Za-z0-9_]{80,}"),
    _rule("gitlab token", "glpat-", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    _rule("slack token", "xox", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    _rule("slack webhook", "hooks.slack.com", r"hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    _rule("stripe key", "_", r"\b[sr]k_live_[A-Za-z0-9]{20,}"),
    _rule("google api key", "AIza", r"\bAIza[0-9A-Za-z_-]{35}"),
    _rule("openai key", "T3BlbkFJ", r"\bsk-[A-Za-z0-9_-]{0,100}T3BlbkFJ[A-Za-z0-9_-]{10,}"),
    _rule("openai key", "sk-", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"),
    _rule("anthropic key", "sk-", r"\bsk-ant-[a-z0-9]+-[A-Za-z0-9_-]{40,}"),
    _rule("npm token", "_", r"\bnpm_[A-Za-z0-9]{36}\b"),
    _rule("npm token", "_", r"_authToken=\S{20,}"),
    _rule("pypi token", "pypi-AgE", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    _rule("hugging face token", "_", r"\bhf_[A-Za-z0-9]{34,40}\b"),
    _rule("azure storage key", "AccountKey=", r"AccountKey=[A-Za-z0-9+/]{40,}={0,2}"),
    _rule(
        "database password",
        "://",
        r"\b(?:postgres(?:ql)?|mysql|mongodb(?:\+srv)?|redis|amqp)://[^\s:/@]+:[^\s@/]{3,}@",
    ),
    _rule("password field", "password", r'"password"\s*:\s*"[^"]{6,}"'),
    _rule("password field", "_", r'"(?:access_key|private_key|client_secret)"\s*:\s*"[^"]{6,}"'),
    _rule("password field", "secret", r'"secret"\s*:\s*"[^"]{6,}"'),
)

_GATES: dict[str, list[Rule]] = {}
for _r in RULES:
    _GATES.setdefault(_r.gate, []).append(_r)


class Found(NamedTuple):
    kind: str
    whole_file: bool
    start: int
    end: int


def find_secrets(text: str, gates: Iterable[str] | None = None) -> list[Found]:
    """Every credential a text holds, in order; [] for almost every text, found by `in` tests alone.
    `gates`: only the rules behind these gates are tried (those a larger text holding this one
    holds, `gates_in`)."""
    found = []
    for gate in _GATES if gates is None else gates:
        if gate in text:
            for rule in _GATES[gate]:
                found.extend(
                    Found(rule.kind, rule.whole_file, m.start(), m.end()) for m in rule.pattern.finditer(text)
                )
    found.sort(key=lambda f: f.start)
    return found


def gates_in(text: str) -> list[str]:
    """The rules' gates a text holds: no part of it can hold a credential of another rule."""
    return [gate for gate in _GATES if gate in text]


def credential_kind(text: str) -> str | None:
    """The kind of credential a text is (a file to skip whole), or None."""
    return next((f.kind for f in find_secrets(text) if f.whole_file), None)


def redact(text: str, found: list[Found] | None = None) -> tuple[str, list[str]]:
    """The text with every token replaced by `[redacted KIND]`, and the kinds replaced (`found`:
    what find_secrets gave for this text, when the caller has it)."""
    found = [f for f in (find_secrets(text) if found is None else found) if not f.whole_file]
    if not found:
        return text, []
    out, kinds, at = [], [], 0
    for f in found:
        if f.start < at:
            continue  # overlapping matches of two rules: the first one covers it
        out.append(text[at : f.start])
        out.append(f"[redacted {f.kind}]")
        kinds.append(f.kind)
        at = f.end
    out.append(text[at:])
    return "".join(out), kinds


def screen_chunks(chunks, redact_tokens: bool = True) -> tuple[str | None, list[str]]:
    """(the kind of credential that makes the file one, or None; the kinds of tokens found) for a
    file's chunks. Tokens are replaced in every chunk's title, body and front-matter values when
    `redact_tokens` (else only found, for a run that keeps them). Whether the file is a credential is
    settled before anything is changed: such a file is skipped whole."""
    # the gates the whole file holds, in one pass over its text: most files hold none, and each
    # chunk is tried only for those (a chunk can hold no gate its file does not). A chunk's metadata
    # is read as its values' JSON there (all their strings, escaped where no gate has a character to
    # escape; nested keys may add gates, never lose one), and as its strings only where that holds one.
    values = [_gate_text(c.meta) for c in chunks]
    gates = gates_in(
        "\n".join(part for c, v in zip(chunks, values, strict=True) for part in (c.title, c.body, v))
    )
    if not gates:
        return None, []
    seen = []
    for chunk, value in zip(chunks, values, strict=True):
        title, body = find_secrets(chunk.title, gates), find_secrets(chunk.body, gates)
        meta = find_secrets(_value_text(chunk.meta), gates) if gates_in(value) else []
        whole = next((f.kind for f in (*title, *body, *meta) if f.whole_file), None)
        if whole:
            return whole, []
        seen.append((chunk, title, body, meta))
    kinds: list[str] = []
    for chunk, title, body, meta in seen:
        for name, found in (("title", title), ("body", body)):
            if found:
                text, replaced = redact(getattr(chunk, name), found)
                kinds += replaced
                if redact_tokens:
                    setattr(chunk, name, text)
        if meta:
            value, replaced = _redact_values(chunk.meta)
            kinds += replaced
            if redact_tokens:
                chunk.meta = value
    return None, kinds


def _gate_text(meta: dict) -> str:
    """Text holding every gate a chunk's metadata strings hold, made fast: its values as JSON."""
    if not meta:
        return ""
    try:
        return json.dumps(list(meta.values()), ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # a key JSON cannot write, a value holding itself
        return _value_text(meta)


def _value_text(value) -> str:
    """The strings of a metadata value (strings, lists and mappings of them), one a line: what
    _redact_values would redact. Its keys are kenning's own names or front-matter keys, and scanning
    them ("message_ids", "senders") only wakes the rules gated on an underscore."""
    if isinstance(value, str):
        return value
    strings: list[str] = []
    pending = [value]
    while pending:  # depth first, in order (a nested value's strings where it stands)
        item = pending.pop()
        if isinstance(item, str):
            strings.append(item)
        elif isinstance(item, list):
            pending.extend(reversed(item))
        elif isinstance(item, dict):
            pending.extend(reversed(item.values()))
    return "\n".join(strings)


def _redact_values(value):
    """A front-matter value (strings, lists and mappings of them) with its tokens redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        pairs = [_redact_values(v) for v in value]
        return [v for v, _ in pairs], [k for _, ks in pairs for k in ks]
    if isinstance(value, dict):
        pairs = {k: _redact_values(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, [k for _, ks in pairs.values() for k in ks]
    return value, []
