"""Errors as the surfaces report them: one plain sentence per refused argument, whichever validator
refused it, and, over HTTP, one body format for every 4xx and 5xx (RFC 9457 problem details).

An agent or a script reads `detail` and acts on it; it never has to parse a validator's report or
tell two error shapes apart.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

PROBLEM_JSON = "application/problem+json"
WHERE = ("query", "body", "path", "header")  # where FastAPI says an argument came from


def plain_errors(errors: list[dict[str, Any]]) -> list[str]:
    """`NAME should be ..., got VALUE` for each error pydantic reports (a tool's arguments over MCP,
    a request's parameters over HTTP)."""
    said = []
    for problem in errors:
        loc = [str(part) for part in problem.get("loc", ())]
        loc = loc[1:] if len(loc) > 1 and loc[0] in WHERE else loc
        name = ".".join(loc) or "the arguments"
        kind, message = problem.get("type", ""), str(problem.get("msg", ""))
        if kind == "missing":
            said.append(f"{name} is required")
            continue
        if kind in ("string_too_short", "too_short") and (problem.get("ctx") or {}).get("min_length") == 1:
            message = "must not be empty"
        elif message.startswith("Input should be "):
            message = "should be " + message.removeprefix("Input should be ")
        else:
            message = message[:1].lower() + message[1:]
        said.append(f"{name} {message}, got {repr(problem.get('input'))[:80]}")
    return said


def problem_body(status: int, detail: str, **extra) -> dict[str, Any]:
    """An RFC 9457 problem: the status, its standard title, and `detail` saying what to do."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    return {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
