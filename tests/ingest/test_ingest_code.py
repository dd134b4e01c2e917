"""Source code: definition chunks with `{basename} > {kind} {name}` titles (methods as
`Class.method`) covering every line."""

from pathlib import Path

from kenning.ingest import ChunkOptions, detect_kind, parse_file


def parse(tmp_path: Path, name: str, text: str, options: ChunkOptions | None = None):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return parse_file(path, options)


def layout(parsed) -> list[tuple[str, int, int]]:
    return [(c.title, c.start_line, c.end_line) for c in parsed.chunks]


def assert_bodies_exact(parsed, text: str) -> None:
    lines = text.splitlines()
    for chunk in parsed.chunks:
        assert chunk.body == "\n".join(lines[chunk.start_line - 1 : chunk.end_line]), chunk.title


PYTHON = '''\
"""Module docstring."""
import os

LIMIT = 10


# Attached comment.
@cache
@other(
    arg=1,
)
def search(query):
    return query


async def fetch(url):
    return url

class Index:
    def add(self, doc):
        pass

if __name__ == "__main__":
    search("x")
'''


def test_python_ast_split(tmp_path: Path):
    parsed = parse(tmp_path, "index.py", PYTHON)
    assert parsed.kind == "code"
    assert layout(parsed) == [
        ("index.py", 1, 6),
        ("index.py > def search", 7, 13),
        ("index.py > async def fetch", 16, 17),
        ("index.py > class Index", 19, 19),
        ("index.py > Index.add", 20, 21),
        ("index.py", 22, 24),
    ]
    assert [c.meta for c in parsed.chunks] == [
        {"language": "python", "symbol": None},
        {"language": "python", "symbol": "search"},
        {"language": "python", "symbol": "fetch"},
        {"language": "python", "symbol": "Index"},
        {"language": "python", "symbol": "Index.add"},
        {"language": "python", "symbol": None},
    ]
    assert_bodies_exact(parsed, PYTHON)
    # Every non-blank line is in exactly one chunk.
    covered = [n for c in parsed.chunks for n in range(c.start_line, c.end_line + 1)]
    assert len(covered) == len(set(covered))
    nonblank = {i for i, line in enumerate(PYTHON.splitlines(), start=1) if line.strip()}
    assert nonblank <= set(covered)


def test_python_syntax_error_still_splits(tmp_path: Path):
    text = "import os\n\ndef ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass C:\n    x = 1\n"
    parsed = parse(tmp_path, "broken.py", text)
    assert layout(parsed) == [
        ("broken.py", 1, 2),
        ("broken.py > def ok", 3, 4),
        ("broken.py > def broken", 6, 7),
        ("broken.py > class C", 9, 10),
    ]


TYPESCRIPT = """\
import { x } from "./x";

/**
 * Handle a request.
 */
export async function handle(req: Request): Promise<void> {
  if (x) { return; }
}

export const add = (a: number, b: number): number => a + b;

export interface Shape {
  area(): number;
}

export type Id = string;

@Component({
  selector: "app-widget",
})
export class Widget extends Base {
  render() { return "}"; }
}
console.log("top level");
export enum Color { Red, Green }
"""


def test_typescript_split(tmp_path: Path):
    parsed = parse(tmp_path, "app.ts", TYPESCRIPT)
    assert layout(parsed) == [
        ("app.ts", 1, 2),
        ("app.ts > function handle", 3, 8),
        ("app.ts > const add", 10, 10),
        ("app.ts > interface Shape", 12, 14),
        ("app.ts > type Id", 16, 16),
        ("app.ts > class Widget", 18, 21),
        ("app.ts > Widget.render", 22, 23),
        ("app.ts", 24, 24),
        ("app.ts > enum Color", 25, 25),
    ]
    assert {c.meta["language"] for c in parsed.chunks} == {"typescript"}
    assert parsed.chunks[1].meta["symbol"] == "handle"
    assert_bodies_exact(parsed, TYPESCRIPT)


def test_javascript_split(tmp_path: Path):
    text = (
        "'use strict';\n"
        "function main() {\n  return 1;\n}\n\n"
        "const helper = function () {\n  return 2;\n};\n"
        "module.exports = { main };\n"
    )
    parsed = parse(tmp_path, "main.mjs", text)
    assert layout(parsed) == [
        ("main.mjs", 1, 1),
        ("main.mjs > function main", 2, 4),
        ("main.mjs > const helper", 6, 8),
        ("main.mjs", 9, 9),
    ]
    assert parsed.chunks[1].meta == {"language": "javascript", "symbol": "main"}


GO = """\
package main

import "fmt"

// Server serves requests.
type Server struct {
	name string
}

var (
	count = 0
)

func (s *Server) Handle(path string) error {
	fmt.Println("{", path)
	return nil
}

func main() {
	_ = 1
}
"""


def test_go_split(tmp_path: Path):
    parsed = parse(tmp_path, "server.go", GO)
    assert layout(parsed) == [
        ("server.go", 1, 4),
        ("server.go > type Server", 5, 8),
        ("server.go > var", 10, 12),
        ("server.go > Server.Handle", 14, 17),
        ("server.go > func main", 19, 21),
    ]
    assert parsed.chunks[3].meta == {"language": "go", "symbol": "Server.Handle"}
    assert_bodies_exact(parsed, GO)


RUST = """\
//! Crate docs stay with the preamble.
use std::fmt;

/// An index over documents.
#[derive(Debug, Clone)]
pub struct Index<'a> {
    name: &'a str,
}

impl<'a> Index<'a> {
    pub fn new(name: &'a str) -> Self {
        Index { name }
    }
}

impl fmt::Display for Index<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", '{')
    }
}

pub(crate) fn helper() {}

pub enum Kind { A, B }

pub trait Scorer {
    fn score(&self) -> f32;
}

mod tests;

macro_rules! square {
    ($x:expr) => { $x * $x };
}
"""


def test_rust_split(tmp_path: Path):
    parsed = parse(tmp_path, "lib.rs", RUST)
    assert layout(parsed) == [
        ("lib.rs", 1, 3),
        ("lib.rs > struct Index", 4, 8),
        ("lib.rs > impl Index<'a>", 10, 10),
        ("lib.rs > Index.new", 11, 14),
        ("lib.rs > impl fmt::Display for Index<'_>", 16, 16),
        ("lib.rs > Index.fmt", 17, 20),
        ("lib.rs > fn helper", 22, 22),
        ("lib.rs > enum Kind", 24, 24),
        ("lib.rs > trait Scorer", 26, 28),
        ("lib.rs > mod tests", 30, 30),
        ("lib.rs > macro_rules! square", 32, 34),
    ]
    assert parsed.chunks[1].body.startswith("/// An index over documents.\n#[derive(Debug, Clone)]")
    assert_bodies_exact(parsed, RUST)


def test_long_definition_is_windowed(tmp_path: Path):
    body = "\n".join(f"    total += {i}  # adds one more number to the total" for i in range(80))
    text = f"def big():\n    total = 0\n{body}\n    return total\n"
    parsed = parse(tmp_path, "big.py", text, ChunkOptions(window_words=120, overlap_words=20))
    assert len(parsed.chunks) > 2
    assert {c.title for c in parsed.chunks} == {"big.py > def big"}
    assert parsed.chunks[0].start_line == 1
    assert parsed.chunks[-1].end_line == 83
    assert_bodies_exact(parsed, text)


def test_other_code_like_files_are_text(tmp_path: Path):
    assert detect_kind(Path("main.c"), b"int main(void) { return 0; }\n") == "text"
    assert detect_kind(Path("config.yaml"), b"a: 1\n") == "text"
    parsed = parse(tmp_path, "query.sql", "SELECT 1;\n")
    assert parsed.kind == "text"
    assert layout(parsed) == [("query.sql", 1, 1)]


def test_a_big_class_is_its_methods_each_titled(tmp_path: Path):
    methods = "\n".join(
        f"    @property\n    def m{i}(self):\n        return {i}  # method number {i} of the class\n"
        for i in range(40)
    )
    text = f'class Store:\n    """Keeps things."""\n    limit = 3\n\n{methods}\n'
    parsed = parse(tmp_path, "store.py", text)
    titles = [c.title for c in parsed.chunks]
    assert titles[0] == "store.py > class Store" and len(titles) == 41
    assert titles[1:] == [f"store.py > Store.m{i}" for i in range(40)]
    assert parsed.chunks[1].body.startswith("    @property")  # the decorator goes with its method
    assert_bodies_exact(parsed, text)


def test_javascript_class_methods(tmp_path: Path):
    text = (
        "export class Cart {\n  constructor() { this.items = []; }\n\n  // Add one item.\n"
        "  add(item) {\n    this.items.push(item);\n  }\n}\n"
    )
    parsed = parse(tmp_path, "cart.js", text)
    assert layout(parsed) == [
        ("cart.js > class Cart", 1, 1),
        ("cart.js > Cart.constructor", 2, 3),
        ("cart.js > Cart.add", 4, 8),
    ]
