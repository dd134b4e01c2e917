"""`kenning serve`: the JSON API, the web page and MCP over streamable HTTP, on one warm Service.

    GET  /api/search?q=...&mode=...&limit=...&collection=...&path=...&since=...&meta=KEY=VALUE
    GET  /api/get?path=notes/a.md:10-20&offset=0&max_chars=20000
    GET  /api/multi-get?pattern=notes/*.md&max_chars=...
    GET  /api/status                           POST /api/index   (only with --allow-write)
    GET  /api/answer?q=...&candidates=20       a cited answer (the JSON of `kenning answer --json`)
    POST /api/cli                              commands the command line forwards (local token only)
    /mcp                                       MCP, streamable HTTP
    /                                          the web page       /docs, /openapi.json: the API

Security, on every request, /mcp included: the Host header must name this server and an Origin
header, when sent, must be one of its own addresses (DNS-rebinding protection, as the MCP
specification asks). This server's names are its loopback names, the address it listens on, the
names the user allows (`--allow-host`, KENNING_SERVE_HOSTS) and, for a server on every interface
(0.0.0.0, ::), the address a connection arrived at, written as an address: a rebound DNS name always
arrives with the attacker's name in Host, never as this machine's address. With a token configured
(required to listen beyond this machine), every API and MCP request and the API description (/docs,
/openapi.json) carry it as `Authorization: Bearer TOKEN`; the page and its script hold no data and
need none. Documents are read from the index only, never from the disk.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import ipaddress
import os
import re
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Annotated

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.routing import APIRoute
from mcp.server.transport_security import TransportSecuritySettings
from starlette.exceptions import HTTPException as StarletteHTTPException

from kenning.surfaces.mcp_server import build_mcp
from kenning.surfaces.problems import PROBLEM_JSON, plain_errors, problem_body
from kenning.surfaces.render import json_text
from kenning.surfaces.schemas import (
    AnswerOutput,
    DocumentOutput,
    DocumentsOutput,
    IndexOutput,
    Problem,
    SearchOutput,
    StatusOutput,
)
from kenning.surfaces.service import MAX_OFFSET, WINDOW_CHARS, Service, WriteRefused

WEB = Path(__file__).parent / "web"

# The interactive API page: Swagger UI from the files the fastapi-offline package installs (no CDN), started
# by web/docs.js, which sends the token the web page keeps. Its stylesheet draws icons from data:
# URLs, the one thing its policy allows beyond the page's own.
SWAGGER_FILES = ("swagger-ui-bundle.js", "swagger-ui.css")
DOCS_PAGE = (
    "<!doctype html><html lang=en><meta charset=utf-8><title>kenning API</title>"
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    "<link rel=stylesheet href=/docs/swagger-ui.css><div id=swagger-ui></div>"
    "<script src=/docs/swagger-ui-bundle.js></script><script src=/web/docs.js></script></html>"
)
FORWARDED = ("search", "get", "multi-get", "status")  # what the command line may run here
# On every response. The page's script and style come from this server only, and no inline script
# runs: text from the index that slipped into the page as markup could not execute. No framing
# (clickjacking), no type sniffing, no referrer to other sites.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}
DOCS_CSP = SECURITY_HEADERS["Content-Security-Policy"].replace("img-src 'self'", "img-src 'self' data:")


WILDCARD = ("0.0.0.0", "::", "")  # listening on every interface
_HOST_NAME = re.compile(r"(?=.{1,253}$)[a-z0-9_][a-z0-9_-]{0,62}(\.[a-z0-9_][a-z0-9_-]{0,62})*\.?")


def allowed_host_names(names) -> list[str]:
    """The names of --allow-host / KENNING_SERVE_HOSTS as a Host header writes them (lower case, an
    IPv6 address in brackets). ValueError, naming the value, for one that is not a host name or an
    address: with a scheme, a port, a path or a wildcard it would never match, or match too much."""
    out = []
    for raw in names:
        name = str(raw).strip().lower()
        bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
        try:
            address = ipaddress.ip_address(bare)
        except ValueError:
            address = None
        if address is not None and not address.is_unspecified:
            out.append(_address_host(address))
        elif address is None and _HOST_NAME.fullmatch(name):
            out.append(name)
        else:
            raise ValueError(
                f"allowed host {str(raw)!r} (--allow-host, KENNING_SERVE_HOSTS) is not a host name or an "
                "address clients can use: give it as kb.lan or 192.168.1.10, without a scheme, a port, "
                "a path or a wildcard"
            )
    return out


def local_addresses(host: str, port: int, allowed: list[str] | tuple = ()) -> tuple[list[str], list[str]]:
    """(Host header values, Origin values) this server answers to: its loopback names, the address
    it listens on (not a wildcard one), and the names the user allowed (allowed_host_names)."""
    names = {"127.0.0.1", "localhost", "[::1]", *allowed_host_names(allowed)}
    if host not in WILDCARD:
        names.add(f"[{host}]" if ":" in host else host)
    hosts = {f"{n}:{port}" for n in names} | (names if port == 80 else set())
    return sorted(hosts), sorted(f"http://{h}" for h in hosts)


def _address_host(address) -> str:
    return f"[{address.compressed}]" if address.version == 6 else str(address)


def _arrival_host(request: Request) -> str | None:
    """The Host header that names the address and port this connection arrived at ("192.168.1.10:7474"):
    what a client on another machine sends when it reaches a server on every interface by address."""
    server = request.scope.get("server")
    if not server or not isinstance(server[0], str) or not isinstance(server[1], int):
        return None
    try:
        address = ipaddress.ip_address(server[0].split("%", 1)[0])
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # a dual-stack socket writes an IPv4 client's address so
    return None if address.is_unspecified else f"{_address_host(address)}:{server[1]}"


def forwarded_settings() -> list[str]:
    """The environment variables a command forwarded by the command line takes from the client:
    kenning's search settings (KENNING_K1, KENNING_MODE, ...). The server announces them so that
    the client sends those and nothing else (kenning.surfaces.client); everything else a command
    reads from the environment (model addresses, keys, the user config) stays the server's own."""
    from kenning.api.settings import search_keys

    return sorted(f"KENNING_{key.upper()}" for key in search_keys())


def create_app(
    service: Service,
    host: str = "127.0.0.1",
    port: int = 7474,
    token: str | None = None,
    local_token: str | None = None,
    allowed_hosts: list[str] | None = None,
    run_command: Callable[..., int] | None = None,
) -> FastAPI:
    hosts, origins = local_addresses(host, port, allowed_hosts or ())
    every_interface = host in WILDCARD
    settings = forwarded_settings()
    mcp = build_mcp(service)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        # the guard below checks Host and Origin for /mcp as for every path (with the same names,
        # in any case, and the arrival address); the SDK's own check knows only a fixed list
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    session_manager = mcp.session_manager

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with session_manager.run():  # a mounted app's lifespan is the parent's to run
            yield

    app = FastAPI(
        title="kenning",
        description="Local-first hybrid search that explains its ranking.",
        version=_version(),
        docs_url=None,  # the stock docs page loads scripts from a CDN; /docs below needs none
        redoc_url=None,
        lifespan=lifespan,
    )

    @app.middleware("http")
    async def guard(request: Request, call_next):
        arrival = _arrival_host(request) if every_interface else None
        own = (hosts, origins) if arrival is None else ([*hosts, arrival], [*origins, f"http://{arrival}"])
        problem = _refused(request, *own, token, local_token)
        if problem:
            response = problem_response(*problem)
        else:
            response = await call_next(request)
            kind = response.headers.get("content-type", "").split(";")[0]
            plain = kind not in ("application/json", PROBLEM_JSON)
            if response.status_code >= 400 and plain and not request.url.path.startswith("/mcp"):
                # what the router behind the API answers on its own: an unknown path, or a known one
                # asked with another method (the mounted MCP app takes every path the API lacks)
                status = response.status_code
                routed = {r.path for r in app.routes if isinstance(r, APIRoute)}
                if status == 404 and request.url.path in routed:
                    status = 405
                response = problem_response(status, _unrouted(request, status))
        response.headers.update(SECURITY_HEADERS)
        if request.url.path == "/docs":
            response.headers["Content-Security-Policy"] = DOCS_CSP
        return response

    @app.get(
        "/api/search",
        summary="Search the index (the JSON of `kenning search --json`)",
        responses=documented(SearchOutput, "ranked hits, with why each matched"),
    )
    def api_search(
        q: Annotated[str, Query(min_length=1, description="the query")],
        mode: Annotated[str | None, Query(description="auto, lexical, dense or hybrid")] = None,
        limit: Annotated[int | None, Query(ge=1, le=1000, description="how many hits (default 10)")] = None,
        offset: Annotated[
            int, Query(ge=0, le=MAX_OFFSET, description="skip this many better-ranked hits (the next page)")
        ] = 0,
        collection: Annotated[list[str] | None, Query(description="only these collections")] = None,
        path: Annotated[list[str] | None, Query(description="only paths matching these globs")] = None,
        type: Annotated[list[str] | None, Query(description="only these kinds of file")] = None,  # noqa: A002
        since: Annotated[str | None, Query(description="dated at or after (2026-01-31, or 7d)")] = None,
        before: Annotated[str | None, Query(description="dated before")] = None,
        meta: Annotated[list[str] | None, Query(description="front matter KEY=VALUE")] = None,
        explain: Annotated[bool, Query(description="every score component and the funnel")] = False,
    ):
        return _answer(
            lambda: service.search(
                q,
                mode=mode,
                limit=limit,
                collections=collection or (),
                paths=path or (),
                kinds=type or (),
                since=since,
                before=before,
                meta=meta or (),
                explain=explain,
                offset=offset,
            )
        )

    @app.get(
        "/api/get",
        summary="A document once, lines numbered (path, path:START-END, chunk:ID)",
        responses=documented(DocumentOutput, "the lines that fit in max_chars, and the call that reads on"),
    )
    def api_get(
        path: Annotated[
            str, Query(min_length=1, description="path, path:START-END, chunk:ID or kenning:///path")
        ],
        offset: Annotated[int, Query(ge=0, description="skip this many of the document's lines")] = 0,
        max_chars: Annotated[
            int, Query(ge=100, le=1_000_000, description="at most this many characters of text")
        ] = WINDOW_CHARS,
    ):
        document = _answer(lambda: service.read(path, max_chars=max_chars, offset=offset))
        if document is None:
            said = f"nothing indexed under {path!r}: use a path from a search hit, or chunk:ID"
            return problem_response(404, said)
        return document

    @app.get(
        "/api/multi-get",
        summary="Several documents by glob, within a size budget",
        responses=documented(DocumentsOutput, "the documents that fit, and what was left out"),
    )
    def api_multi_get(
        pattern: Annotated[str, Query(min_length=1, description="a glob over the indexed paths")],
        max_chars: Annotated[int, Query(ge=100, description="at most this many characters in all")] = 50_000,
    ):
        return _answer(lambda: service.read_many(pattern, max_chars=max_chars))

    @app.get(
        "/api/answer",
        summary="A cited answer, or found=false (the JSON of `kenning answer --json`)",
        responses=documented(AnswerOutput, "the answer and its citations, or what the sources do not say"),
    )
    def api_answer(
        q: Annotated[str, Query(min_length=1, description="the question")],
        candidates: Annotated[int, Query(ge=1, le=50, description="passages to weigh")] = 20,
    ):
        return _answer(lambda: service.answer(q, candidates))

    @app.get(
        "/api/status",
        summary="What the index holds",
        responses=documented(StatusOutput, "counts and the model"),
    )
    def api_status():
        return JSONResponse(content=_plain(service.status()))

    @app.post(
        "/api/index",
        summary="Index files and folders (a server started with --allow-write)",
        responses=documented(IndexOutput, "what was indexed, and each file that failed"),
    )
    def api_index(body: dict):
        paths, collection = body.get("paths"), body.get("collection", "default")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
            return problem_response(400, "paths must be a list of files and folders")
        if not isinstance(collection, str) or not collection.strip():
            return problem_response(400, "collection must be a name")
        return _answer(lambda: service.add(paths, collection))

    @app.post("/api/cli", include_in_schema=False)
    def api_cli(body: dict):
        return run_forwarded(body)

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def page():
        return FileResponse(WEB / "index.html", media_type="text/html")

    @app.get("/web/{name}", include_in_schema=False)
    def asset(name: str):
        target = (WEB / name).resolve()
        if target.parent != WEB.resolve() or not target.is_file():
            return problem_response(404, "no such file")
        return FileResponse(target)

    @app.get("/docs", include_in_schema=False)
    def docs():
        return HTMLResponse(DOCS_PAGE)

    @app.get("/docs/{name}", include_in_schema=False)
    def docs_asset(name: str):
        if name not in SWAGGER_FILES:
            return problem_response(404, "no such file")
        return FileResponse(swagger_files() / name)

    @app.exception_handler(RequestValidationError)
    async def refused_parameters(request: Request, exc: RequestValidationError):
        said = plain_errors(list(exc.errors()))
        return problem_response(422, "; ".join(said) or "the request's parameters do not fit", errors=said)

    @app.exception_handler(StarletteHTTPException)
    async def http_problem(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
        if exc.status_code in (404, 405):
            detail = _unrouted(request, exc.status_code)
        return problem_response(exc.status_code, detail)

    @app.exception_handler(Exception)
    async def fault(request: Request, exc: Exception):  # kenning's own fault: said, not a traceback
        return problem_response(500, f"kenning could not do that ({type(exc).__name__}: {exc})"[:500])

    app.mount("/", mcp_app)  # last: it answers /mcp
    app.state.service = service

    def run_forwarded(body: dict) -> JSONResponse:
        """Run a read-only command the command line sent (same output as running it locally), with
        `run_command` (the command line's `main`, handed in by whoever starts the server: this
        module sits below the command line and does not import it)."""
        argv = [str(a) for a in body.get("argv", [])]
        if not argv or argv[0] not in FORWARDED:
            return problem_response(400, "only search, get, multi-get and status run here")
        if run_command is None:
            return problem_response(503, "this server runs no forwarded commands")
        out, err = _Terminal(bool(body.get("tty"))), io.StringIO()
        with service.lock, _client_context(body.get("cwd"), body.get("env"), settings):
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = run_command(argv, index=service.index)
                except SystemExit as exc:  # argparse on a bad flag
                    code = exc.code if isinstance(exc.code, int) else 2
        return JSONResponse({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})

    return app


def swagger_files() -> Path:
    """The folder holding Swagger UI's script and stylesheet (OpenAPI 3.1, which FastAPI writes)."""
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


def documented(model, description: str) -> dict:
    """An endpoint's responses for /openapi.json: its JSON on success, a problem on any error."""
    problem = {
        "model": Problem,
        "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }
    return {
        200: {"model": model, "description": description},
        "4XX": {**problem, "description": "a refused request: `detail` says what to change"},
        "5XX": {**problem, "description": "kenning could not do it: `detail` says why"},
    }


def _unrouted(request: Request, status: int) -> str:
    if status == 404:
        return f"no such path {request.url.path[:200]!r} (the API is described at /docs)"
    if status == 405:
        return f"{request.method} is not allowed on {request.url.path[:200]!r}"
    return HTTPStatus(status).phrase


def problem_response(status: int, detail: str, **extra) -> JSONResponse:
    """Every 4xx and 5xx of this server, in one shape (RFC 9457, kenning.surfaces.problems)."""
    return JSONResponse(problem_body(status, detail, **extra), status_code=status, media_type=PROBLEM_JSON)


def _answer(call):
    try:
        result = call()
    except WriteRefused as exc:
        return problem_response(403, str(exc))
    except (ValueError, LookupError) as exc:
        return problem_response(400, str(exc))
    return (
        result if result is None or isinstance(result, JSONResponse) else JSONResponse(content=_plain(result))
    )


def _plain(data):
    import json

    return json.loads(json_text(data))  # strict JSON (no NaN), dates and paths as strings


def _refused(request: Request, hosts, origins, token, local_token) -> tuple[int, str] | None:
    host = request.headers.get("host", "").lower()
    if host not in hosts:
        return 421, (
            f"this server does not answer to host {host[:100]!r} (allow a name clients use with "
            "`kenning serve --allow-host NAME`)"
        )
    origin = request.headers.get("origin")
    if origin is not None and origin not in origins:
        return 403, f"requests from origin {origin!r} are refused"
    path = request.url.path
    if path == "/api/cli":
        if not local_token or not _bearer_is(request, local_token):
            return 401, "forwarded commands need this server's local token"
        return None
    private = path.startswith(("/api/", "/mcp")) or path == "/openapi.json"  # /docs holds no data
    if token and private and not _bearer_is(request, token):
        return 401, "send the server's token: Authorization: Bearer TOKEN"
    return None


def _bearer_is(request: Request, expected: str) -> bool:
    given = request.headers.get("authorization", "")
    return given.startswith("Bearer ") and hmac.compare_digest(given[7:].encode(), expected.encode())


class _Terminal(io.StringIO):
    """Captured output that answers isatty() as the client's terminal would."""

    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@contextlib.contextmanager
def _client_context(cwd, env, settings: list[str]):
    """The client's folder, search settings and terminal variables, for the length of one forwarded
    command (commands run one at a time under the service lock): exactly the variables the command
    line would read differently there (`settings`, and the terminal's), each the client's value or
    unset as on the client. Every other variable stays the server's own: its model addresses, its
    config and the keys its models send."""
    keep_cwd = os.getcwd()
    from kenning.surfaces.client import CLIENT_ENV, forwarded_env  # the same rule on both ends

    given = forwarded_env(settings, {str(k): v for k, v in env.items()}) if isinstance(env, dict) else {}
    saved = {k: os.environ.get(k) for k in {*settings, *CLIENT_ENV}}
    try:
        for k in saved:
            os.environ.pop(k, None)
        os.environ.update(given)
        if isinstance(cwd, str) and cwd and Path(cwd).is_dir():
            os.chdir(cwd)
        yield
    finally:
        os.chdir(keep_cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _version() -> str:
    from kenning import __version__

    return __version__
