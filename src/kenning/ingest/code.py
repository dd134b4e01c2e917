"""Source code: one chunk per top-level definition, titled by what it defines.

A query like "where is search defined" should land on `index.py > def search`, not on a window that
starts halfway through it. Python is split with `ast` (exact spans); JavaScript/TypeScript, Go and
Rust with a line-based splitter that looks for definitions starting at column 0. Lines outside any
definition (imports, constants, top-level statements) become chunks titled by the file name, so
every line of the file is covered.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .chunk import Chunk, ChunkOptions, ParsedSource
from .source import split_source_lines, windowed_chunks

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".go": "go",
    ".rs": "rust",
}


@dataclass
class Span:
    """Lines [start, end] (0-based, inclusive) holding one definition."""

    start: int
    end: int
    kind: str
    name: str | None
    symbol: str | None = None  # the bare name when `name` carries more (a Go method's receiver)


def parse_code(text: str, path: Path, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """Split a source file into definition chunks plus the code between them."""
    language = LANGUAGES[path.suffix.lower()]
    lines = split_source_lines(text)
    spans = None
    if language == "python":
        spans = _python_spans("\n".join(lines), lines)
    if spans is None:
        spans = _regex_spans(lines, _SPLITTERS[language])
    chunks = _assemble(lines, spans, Path(display).name, language, doc_key, options)
    return ParsedSource(kind="code", chunks=chunks)


def _assemble(
    lines: list[str],
    spans: list[Span],
    basename: str,
    language: str,
    doc_key: str,
    options: ChunkOptions,
) -> list[Chunk]:
    """Definitions become titled chunks; the gaps between them become chunks titled by the file."""
    chunks: list[Chunk] = []
    cursor = 0

    def emit(start: int, end: int, title: str, symbol: str | None) -> None:
        chunks.extend(
            windowed_chunks(
                lines[start : end + 1],
                start + 1,
                options,
                title=title,
                doc_key=doc_key,
                meta={"language": language, "symbol": symbol},
            )
        )

    for span in sorted(spans, key=lambda s: s.start):
        if span.start < cursor:
            continue  # overlapping detection; the earlier definition already covers it
        if span.start > cursor:
            emit(cursor, span.start - 1, basename, None)
        label = f"{span.kind} {span.name}" if span.name else span.kind
        emit(span.start, span.end, f"{basename} > {label}", span.symbol or span.name)
        cursor = span.end + 1
    if cursor < len(lines):
        emit(cursor, len(lines) - 1, basename, None)
    return chunks


# --- Python ---------------------------------------------------------------------------------


def _python_spans(text: str, lines: list[str]) -> list[Span] | None:
    """Exact spans of top-level defs and classes (with decorators and comments right above)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None  # the regex splitter still gives useful chunks for half-written code
    spans: list[Span] = []
    previous_end = -1
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            kind = "def"
        elif isinstance(node, ast.AsyncFunctionDef):
            kind = "async def"
        elif isinstance(node, ast.ClassDef):
            kind = "class"
        else:
            previous_end = (node.end_lineno or node.lineno) - 1
            continue
        start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        while start - 1 > previous_end and lines[start - 1].startswith("#"):
            start -= 1
        end = (node.end_lineno or node.lineno) - 1
        spans.append(Span(start, end, kind, node.name))
        previous_end = end
    return spans


# --- Line-based splitter for the other languages -------------------------------------------


@dataclass
class Splitter:
    """How to spot definition starts, what may be attached above them, and where they end."""

    describe: Callable[[str], tuple | None]  # a line -> (kind, name[, symbol]) when it starts a definition
    attachment: re.Pattern  # lines (at column 0) that belong to the definition below them
    find_end: Callable[[list[str], int, int], int]


def _regex_spans(lines: list[str], splitter: Splitter) -> list[Span]:
    """Definition starts at column 0, each extended up over its attached comments/attributes."""
    found: list[tuple[int, int, tuple]] = []  # (block start, definition line, description)
    pending: int | None = None
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.strip() or line[0] in " \t":
            pending = None
            i += 1
            continue
        if splitter.attachment.match(line):
            if pending is None:
                pending = i
            i = _attachment_end(lines, i) + 1
            continue
        described = splitter.describe(line)
        if described:
            found.append((pending if pending is not None else i, i, described))
        pending = None
        i += 1

    spans = []
    for k, (block_start, def_line, described) in enumerate(found):
        limit = found[k + 1][0] - 1 if k + 1 < len(found) else n - 1
        end = splitter.find_end(lines, def_line, limit)
        while end > def_line and not lines[end].strip():
            end -= 1
        spans.append(Span(block_start, end, *described))
    return spans


def _attachment_end(lines: list[str], i: int) -> int:
    """Last line of the comment, attribute or decorator starting at line i (may span lines)."""
    line = lines[i]
    if line.startswith("/*"):
        j = i
        while j < len(lines) and "*/" not in (lines[j][2:] if j == i else lines[j]):
            j += 1
        return min(j, len(lines) - 1)
    if line.startswith(("#[", "@")):
        depth = 0
        for j in range(i, len(lines)):
            depth += sum(lines[j].count(c) for c in "([{") - sum(lines[j].count(c) for c in ")]}")
            if depth <= 0:
                return j
        return len(lines) - 1
    return i


_STRINGS = {
    # Rust lifetimes ('a) look like an unterminated char literal, so only one-character literals.
    "rust": re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\''),
    "go": re.compile(r'"(?:\\.|[^"\\])*"|`[^`]*`|\'(?:\\.|[^\'\\])+\''),
    "javascript": re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`(?:\\.|[^`\\])*`'),
}
_STRINGS["typescript"] = _STRINGS["javascript"]
_INLINE_BLOCK_COMMENT = re.compile(r"/\*.*?\*/")


def _brace_end(language: str) -> Callable[[list[str], int, int], int]:
    """End of a brace-language definition: where its brackets close again.

    A definition that never opens a bracket (`type X int`, `struct Unit;`, `const f = x => x`)
    ends at its first ';' or at the first blank line. Everything is bounded by `limit`, the line
    before the next definition, so a miscount can only make a chunk shorter, never lose lines.
    """
    strings = _STRINGS[language]

    def find_end(lines: list[str], start: int, limit: int) -> int:
        depth = 0
        opened = False
        in_comment = False
        for j in range(start, limit + 1):
            code = lines[j]
            if in_comment:
                if "*/" not in code:
                    continue
                code = code[code.index("*/") + 2 :]
                in_comment = False
            code = _INLINE_BLOCK_COMMENT.sub(" ", strings.sub('""', code))
            code = code.split("//", 1)[0]
            if "/*" in code:
                code = code[: code.index("/*")]
                in_comment = True
            if j > start and not opened and not lines[j].strip():
                return j - 1
            depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
            depth = max(depth, 0)
            if depth > 0:
                opened = True
            elif opened or code.rstrip().endswith(";"):
                return j
        return limit

    return find_end


def _python_end(lines: list[str], start: int, limit: int) -> int:
    """End of a Python definition without a parse tree: the indented block below it."""
    end = start
    for j in range(start + 1, limit + 1):
        line = lines[j]
        if not line.strip():
            continue
        if line[0] in " \t)]}":
            end = j
        else:
            break
    return end


# Patterns for definition starts. Each describe() returns (kind, name[, symbol]) or None.

_PY_DEF = re.compile(r"^(async\s+def|def|class)\s+([A-Za-z_]\w*)")


def _describe_python(line: str) -> tuple | None:
    m = _PY_DEF.match(line)
    if not m:
        return None
    return re.sub(r"\s+", " ", m.group(1)), m.group(2)


_JS_PREFIX = r"(?:export\s+)?(?:default\s+)?(?:declare\s+)?"
_JS_PATTERNS = [
    (re.compile(_JS_PREFIX + r"(?:async\s+)?function\s*\*?\s*([\w$]+)?"), "function"),
    (re.compile(_JS_PREFIX + r"(?:abstract\s+)?class\b(?:\s+(?!extends\b|implements\b)([\w$]+))?"), "class"),
    (re.compile(_JS_PREFIX + r"interface\s+([\w$]+)"), "interface"),
    (re.compile(_JS_PREFIX + r"type\s+([\w$]+)\s*(?:<[^=]*>)?\s*="), "type"),
    (re.compile(_JS_PREFIX + r"(?:const\s+)?enum\s+([\w$]+)"), "enum"),
    (re.compile(_JS_PREFIX + r"(?:namespace|module)\s+([\w$.]+)\s*\{"), "namespace"),
]
_JS_FUNCTION_VALUE = re.compile(
    r"(?:export\s+)?(const|let|var)\s+([\w$]+)\s*(?::[^=]+)?=\s*(?:async\s+)?"
    r"(?:function\b|[\w$]+\s*=>|\(.*=>|<.*=>|\(\s*$)"
)
_JS_EXPORT_DEFAULT = re.compile(r"export\s+default\b")


def _describe_js(line: str) -> tuple | None:
    for pattern, kind in _JS_PATTERNS:
        m = pattern.match(line)
        if m:
            return kind, m.group(1)
    m = _JS_FUNCTION_VALUE.match(line)
    if m:
        return m.group(1), m.group(2)
    if _JS_EXPORT_DEFAULT.match(line):
        return "export default", None
    return None


_GO_FUNC = re.compile(r"func\s*(\([^)]*\))?\s*([A-Za-z_]\w*)")
_GO_TYPE = re.compile(r"type\s+([A-Za-z_]\w*)")
_GO_GROUP = re.compile(r"(var|const|type)\s*\(")


def _describe_go(line: str) -> tuple | None:
    m = _GO_FUNC.match(line)
    if m:
        receiver = " ".join(m.group(1).split()) + " " if m.group(1) else ""
        return "func", receiver + m.group(2), m.group(2)
    m = _GO_GROUP.match(line)
    if m:
        return m.group(1), None
    m = _GO_TYPE.match(line)
    if m:
        return "type", m.group(1)
    return None


_RUST_VIS = r"(?:pub(?:\s*\([^)]*\))?\s+)?"
_RUST_FN = re.compile(
    _RUST_VIS + r"(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+(?:\"[^\"]*\"\s+)?)?"
    r"fn\s+([A-Za-z_]\w*)"
)
_RUST_ITEM = re.compile(_RUST_VIS + r"(?:unsafe\s+)?(struct|enum|trait|union|mod|type)\s+([A-Za-z_]\w*)")
_RUST_IMPL = re.compile(r"(?:unsafe\s+)?impl\b\s*(?:<(?:[^<>]|<[^<>]*>)*>)?\s*(.*?)\s*(?:\{.*|where\b.*)?$")
_RUST_MACRO = re.compile(r"macro_rules!\s*([A-Za-z_]\w*)")


def _describe_rust(line: str) -> tuple | None:
    m = _RUST_FN.match(line)
    if m:
        return "fn", m.group(1)
    m = _RUST_ITEM.match(line)
    if m:
        return m.group(1), m.group(2)
    m = _RUST_IMPL.match(line)
    if m:
        return "impl", m.group(1) or None
    m = _RUST_MACRO.match(line)
    if m:
        return "macro_rules!", m.group(1)
    return None


_SPLITTERS = {
    "python": Splitter(_describe_python, re.compile(r"#|@"), _python_end),
    "javascript": Splitter(_describe_js, re.compile(r"//|/\*|@"), _brace_end("javascript")),
    "typescript": Splitter(_describe_js, re.compile(r"//|/\*|@"), _brace_end("typescript")),
    "go": Splitter(_describe_go, re.compile(r"//|/\*"), _brace_end("go")),
    "rust": Splitter(_describe_rust, re.compile(r"//(?!!)|/\*(?!!)|#\["), _brace_end("rust")),
}
