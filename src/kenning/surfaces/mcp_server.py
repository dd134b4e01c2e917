"""kenning as an MCP server (the official `mcp` SDK, 2.x): `kenning mcp` over stdio, and at `/mcp` of
`kenning serve` over streamable HTTP.

Every tool answers with structured content (the same JSON as the command line's `--json`) and a
short text form for the model to read. A user's mistake (a bad argument, nothing under a path, a
read-only server) is a tool error with a message that says what to do; the server never stops.
Writing tools exist only when the server was started with --allow-write.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Literal

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, Resource, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from kenning.api.documents import URI_PREFIX, document_uri
from kenning.common.unicode import well_formed
from kenning.surfaces.problems import plain_errors
from kenning.surfaces.render import answer_text
from kenning.surfaces.schemas import (
    AnswerOutput,
    DocumentOutput,
    DocumentsOutput,
    GlossaryOutput,
    IndexOutput,
    SearchOutput,
    StatusOutput,
)
from kenning.surfaces.service import MAX_OFFSET, WINDOW_CHARS, Service, hits_text
from kenning.surfaces.terminal import visible

INSTRUCTIONS = """kenning searches the user's own files (notes, code, PDFs, chat logs) with a hybrid of
BM25 and dense vectors, and says why it ranked each result. Use `search` with the user's words; read a
result with `get` (a path, a path with lines such as notes/auth.md:120-160, or chunk:ID), which
returns at most max_chars characters and says the offset that reads on; `multi_get` reads several
files by glob within a size budget. When a search finds nothing, say so:
do not invent an answer."""

Mode = Literal["auto", "lexical", "dense", "hybrid"]
# the reading tools change nothing and reach nothing beyond the index
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


MAX_RESOURCES = 10_000  # documents resources/list names at most (the index may hold more: search finds them)


class _KenningMCP(MCPServer):
    """The SDK's server with kenning's documents as resources, and arguments that do not fit a
    tool's schema answered in one plain sentence per argument (`search: limit should be greater
    than or equal to 1, got -1`), not the validator's report with its links."""

    def __init__(self, service: Service, **options):
        super().__init__("kenning", **options)
        self.service = service

    async def list_resources(self) -> list[Resource]:
        """Each indexed file as a resource, `kenning:///its/path` (`get` takes the same URI)."""
        return [
            Resource(
                uri=document_uri(source["path"]),
                name=source["path"],
                description=f"{source['kind']} in {source['collection']}, {source['chunks']} chunks",
                mime_type="text/plain",
            )
            for source in self.service.sources()[:MAX_RESOURCES]
        ]

    async def read_resource(self, uri, context=None):
        """A document resource as `get` reads it: lines numbered, at most WINDOW_CHARS, with the
        `get` call that reads on."""
        if not str(uri).startswith(URI_PREFIX):
            return await super().read_resource(uri, context)
        try:
            doc = self.service.read(str(uri), max_chars=WINDOW_CHARS)
        except ValueError as exc:
            raise ResourceError(str(exc)) from exc
        if doc is None:
            raise ResourceError(f"nothing indexed under {str(uri)!r}")
        text = visible(well_formed(_document_text(doc)))
        return [ReadResourceContents(content=text, mime_type="text/plain")]

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(plain_argument_errors(name, exc.__cause__)) from None
            raise


def plain_argument_errors(tool: str, error: ValidationError) -> str:
    """One plain sentence per refused argument: `search: limit should be greater than or equal to
    1, got -1; mode should be 'auto', 'lexical', 'dense' or 'hybrid', got 'fast'`."""
    return f"{tool}: " + "; ".join(plain_errors(error.errors(include_url=False)))


def _result(structured: dict, text: str) -> CallToolResult:
    """The structured content is the data as it is; the text, which a client may show as it stands,
    has every control character made visible (kenning.surfaces.terminal)."""
    content = [TextContent(type="text", text=visible(well_formed(text)))]
    return CallToolResult(content=content, structured_content=_well_formed(structured))


def _well_formed(data: dict) -> dict:
    """The structured content with no unpaired surrogate in any string (a tool's argument may hold
    one, and the SDK cannot write it: the call was never answered)."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    return data if text == well_formed(text) else json.loads(well_formed(text))


def _document_text(doc: dict) -> str:
    lines = [
        f"{doc['path']}"
        + (f" lines {doc['line_range'][0]}-{doc['line_range'][1]}" if doc["line_range"] else "")
    ]
    for section in doc["sections"]:
        lines.append(f"§ {section['title']}" + (f" (p.{section['page']})" if section["page"] else ""))
        lines += [
            f"{row['n']:>6}  {row['text']}" if row["n"] is not None else row["text"]
            for row in section["lines"]
        ]
    part = doc.get("window")
    if part and part["next"]:
        lines.append(
            f"[{part['lines_after']} more lines ({part['chars_after']} characters) not shown: call get "
            f"with {json.dumps(part['next'], ensure_ascii=False)} to read on]"
        )
    return "\n".join(lines)


def build_mcp(service: Service) -> MCPServer:
    """The MCP server over a warm Service (tools only; a transport is chosen by the caller)."""
    server = _KenningMCP(service, instructions=INSTRUCTIONS)
    for name in ("mcp", "mcp.server"):  # the SDK logs every call at INFO; kenning's own errors say enough
        logging.getLogger(name).setLevel(logging.WARNING)

    def guarded(call):
        try:
            return call()
        except ToolError:
            raise
        except (ValueError, PermissionError, LookupError) as exc:
            raise ToolError(visible(well_formed(str(exc)))) from exc
        except Exception as exc:  # a fault of kenning's own still answers, with its kind and message
            message = f"kenning could not do that ({type(exc).__name__}: {exc})"
            raise ToolError(visible(well_formed(message))) from exc

    @server.tool(
        name="search",
        annotations=READ_ONLY,
        description=(
            "Search the indexed files. Returns ranked hits (title = heading path, path, line range, "
            "a snippet of the document's own text with the matched words' spans, a score and why it "
            "matched) and notices such as "
            "'no chunk contains X'. An empty list means the evidence is not in the index."
        ),
    )
    def search(
        query: Annotated[
            str, Field(description="What to look for, in plain words or a question", min_length=1)
        ],
        mode: Annotated[
            Mode, Field(description="auto (hybrid when the index has vectors), lexical, dense, hybrid")
        ] = "auto",
        limit: Annotated[int, Field(description="How many results", ge=1, le=100)] = 10,
        offset: Annotated[
            int,
            Field(description="Skip this many better-ranked results (the next page)", ge=0, le=MAX_OFFSET),
        ] = 0,
        collections: Annotated[list[str], Field(description="Only these collections")] = [],  # noqa: B006
        paths: Annotated[
            list[str], Field(description="Only files whose path matches one of these globs")
        ] = [],  # noqa: B006
        since: Annotated[
            str | None, Field(description="Only documents dated at or after: 2026-01-31 or an age like 7d")
        ] = None,
        before: Annotated[
            str | None, Field(description="Only documents dated before this date or age")
        ] = None,
        meta: Annotated[
            dict[str, str],
            Field(description='Front-matter fields that must be equal, e.g. {"status": "draft"}'),
        ] = {},  # noqa: B006
        explain: Annotated[bool, Field(description="Add every score component and the funnel")] = False,
    ) -> Annotated[CallToolResult, SearchOutput]:
        result = guarded(
            lambda: service.search(
                query,
                mode=mode,
                limit=limit,
                collections=collections,
                paths=paths,
                since=since,
                before=before,
                meta=meta,
                explain=explain,
                offset=offset,
            )
        )
        return _result(result, hits_text(result))

    @server.tool(
        name="get",
        annotations=READ_ONLY,
        description=(
            "Read an indexed document, each line once with its line number: a path, a path with a "
            "line range (notes/auth.md:120-160), a document id, or chunk:ID from a search hit. Only "
            "what the index holds is returned, never other files. At most max_chars characters come "
            "back; the result's window says how many lines are left and the offset that reads on."
        ),
    )
    def get(
        path: Annotated[
            str,
            Field(
                description=(
                    "path, path:START-END, path#page=N, path#msg=MESSAGE_ID (a chat log at one message), "
                    "a kenning:// resource URI, document id, or chunk:ID"
                ),
                min_length=1,
            ),
        ],
        offset: Annotated[
            int, Field(description="Skip this many of the document's lines (from a previous get)", ge=0)
        ] = 0,
        max_chars: Annotated[
            int, Field(description="Return at most this many characters of text", ge=100, le=1_000_000)
        ] = WINDOW_CHARS,
    ) -> Annotated[CallToolResult, DocumentOutput]:
        doc = guarded(lambda: service.read(path, max_chars=max_chars, offset=offset))
        if doc is None:
            raise ToolError(f"nothing indexed under {path!r}: use a path from a search hit, or chunk:ID")
        return _result(doc, _document_text(doc))

    @server.tool(
        name="multi_get",
        annotations=READ_ONLY,
        description=(
            "Read several indexed documents at once: a glob over indexed paths (notes/*.md) or a list "
            "of references, up to max_chars characters; what does not fit is listed with its size."
        ),
    )
    def multi_get(
        pattern: Annotated[
            str | None, Field(description="A glob over indexed paths, e.g. notes/*.md")
        ] = None,
        refs: Annotated[list[str], Field(description="Or: paths, path:START-END, chunk:ID")] = [],  # noqa: B006
        max_chars: Annotated[
            int, Field(description="Stop adding documents beyond this size", ge=100, le=1_000_000)
        ] = 50_000,
    ) -> Annotated[CallToolResult, DocumentsOutput]:
        if not pattern and not refs:
            raise ToolError("give a glob pattern or a list of refs")
        found = guarded(lambda: service.read_many(pattern or refs, max_chars=max_chars))
        text = "\n\n".join(_document_text(d) for d in found["documents"])
        notes = [f"left out {x['ref']} ({x['chars']} characters)" for x in found["left_out"]]
        notes += [f"nothing indexed under {r}" for r in found["not_found"]]
        return _result(found, "\n".join([text, *notes]).strip() or "no documents matched")

    @server.tool(
        name="answer",
        annotations=READ_ONLY,
        description=(
            "Answer a question from the indexed files with a citation (path, heading, line range, "
            "quoted words) for every sentence, or found=false with what the sources do not say and the "
            "closest passages. Use it for questions; use search to browse."
        ),
    )
    def answer(
        question: Annotated[str, Field(description="The question, in plain words", min_length=1)],
        candidates: Annotated[
            int, Field(description="How many passages to weigh (10 to 20)", ge=1, le=50)
        ] = 20,
    ) -> Annotated[CallToolResult, AnswerOutput]:
        result = guarded(lambda: service.answer(question, candidates))
        return _result(result, answer_text(result))

    @server.tool(
        name="status",
        description="What the index holds: files, chunks, collections, model, vector coverage.",
        annotations=READ_ONLY,
    )
    def status() -> Annotated[CallToolResult, StatusOutput]:
        data = guarded(service.status)
        vectors = (
            f"vectors from {data['embedder']['model']}" if data["embedder"] else "no vectors (lexical only)"
        )
        collections = len(data["collections"])
        text = f"{data['sources']} file(s), {data['chunks']} chunks in {collections} collection(s); {vectors}"
        return _result(json.loads(json.dumps(data, default=str)), text)

    if service.allow_write:

        @server.tool(
            name="index",
            description="Index (or re-index) files and folders into a collection; only changes are redone.",
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
        )
        def index(
            paths: Annotated[list[str], Field(description="Files or folders", min_length=1)],
            collection: Annotated[str, Field(description="Collection name")] = "default",
        ) -> Annotated[CallToolResult, IndexOutput]:
            report = guarded(lambda: service.add(paths, collection))
            return _result(
                report, f"indexed {report['files_indexed']} file(s), {report['chunks_added']} chunks added"
            )

        @server.tool(
            name="glossary_add",
            description="Add a glossary group: a canonical term and aliases that expand queries.",
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
            ),
        )
        def glossary_add(
            canonical: Annotated[str, Field(min_length=1)],
            aliases: Annotated[list[str], Field(min_length=1)],
            scope: Annotated[str, Field(description="A collection name, or empty for all")] = "",
        ) -> Annotated[CallToolResult, GlossaryOutput]:
            result = guarded(lambda: service.glossary_add(canonical, aliases, scope))
            return _result(result, f"glossary group {result['group']}: {canonical} = {', '.join(aliases)}")

    return server


def serve_stdio(service: Service) -> None:
    """`kenning mcp`: the MCP server on stdin and stdout. Each incoming line is made well-formed
    first (`_WellFormedLines`): a JSON "\\ud800" is valid JSON that the SDK cannot parse, and it
    left the call unanswered."""
    import io
    import sys

    import anyio
    from mcp.server.stdio import stdio_server

    server = build_mcp(service)
    lines = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")

    async def run() -> None:
        async with stdio_server(stdin=anyio.wrap_file(_WellFormedLines(lines))) as (reading, writing):
            low = server._lowlevel_server  # what MCPServer.run("stdio") runs, with our stdin
            await low.run(reading, writing, low.create_initialization_options())

    anyio.run(run)


class _WellFormedLines:
    """A line reader whose JSON lines carry no unpaired surrogate: each is decoded with Python's
    json (which accepts one), its strings made well-formed, and written again."""

    def __init__(self, stream):
        self.stream = stream

    def readline(self) -> str:
        line = self.stream.readline()
        if "\\u" not in line:
            return line
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack: the SDK reports it
            return line
        text = json.dumps(message, ensure_ascii=False)
        return well_formed(text) + "\n" if text != well_formed(text) else line
