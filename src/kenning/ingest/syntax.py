"""Where definitions start and end in source code, read from tree-sitter parse trees.

Each top-level definition becomes a Span (with the comments, doc comments, decorators and attributes
right above it); a class, or a Rust impl block, also lists its methods as member Spans, so a method
is found as `Class.method`. tree-sitter recovers from syntax errors, so half-written code still
splits where it can. Grammars come from the tree-sitter-<language> packages on PyPI (compiled
wheels, nothing fetched at run time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache


@dataclass
class Span:
    """Lines [start, end] (0-based, inclusive) holding one definition."""

    start: int
    end: int
    kind: str
    name: str | None
    symbol: str | None = None  # what the chunk is about, e.g. "Index.add"
    members: list[Span] = field(default_factory=list)


@cache
def _parser(language: str):
    import tree_sitter as ts

    if language == "python":
        import tree_sitter_python as grammar

        lang = grammar.language()
    elif language == "javascript":
        import tree_sitter_javascript as grammar

        lang = grammar.language()
    elif language == "typescript":
        import tree_sitter_typescript as grammar

        lang = grammar.language_tsx()  # TSX is a superset: .ts and .tsx both parse
    elif language == "go":
        import tree_sitter_go as grammar

        lang = grammar.language()
    elif language == "rust":
        import tree_sitter_rust as grammar

        lang = grammar.language()
    else:
        raise ValueError(f"no grammar for {language}")
    return ts.Parser(ts.Language(lang))


def spans(language: str, text: str) -> list[Span]:
    """The definitions of a source file, in order."""
    tree = _parser(language).parse(text.encode("utf-8", "surrogatepass"))
    reader = _READERS[language]
    out = []
    children = tree.root_node.children
    for i, node in enumerate(children):
        span = reader(node)
        if span is not None:
            span.start = _attached_start(children, i, language)
            out.append(span)
    return out


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _name(node, field_name: str = "name") -> str | None:
    child = node.child_by_field_name(field_name)
    return _text(child) if child is not None else None


def _span(node, kind: str, name: str | None, symbol: str | None = None) -> Span:
    return Span(node.start_point[0], node.end_point[0], kind, name, symbol or name)


def _is_comment(node, language: str) -> bool:
    if language == "python":
        return node.type == "comment"
    if language == "rust" and node.type in ("line_comment", "block_comment"):
        return not _text(node).startswith(("//!", "/*!"))  # inner doc comments describe the crate
    return "comment" in node.type or node.type in ("attribute_item", "decorator")


def _attached_start(siblings, i: int, language: str) -> int:
    """A definition's first line, taking the comments and attributes directly above it (no blank
    line between) with it."""
    start = siblings[i].start_point[0]
    j = i - 1
    while j >= 0 and _is_comment(siblings[j], language) and siblings[j].end_point[0] >= start - 1:
        start = siblings[j].start_point[0]
        j -= 1
    return start


def _with_members(span: Span, owner: str | None, body, reader, language: str) -> Span:
    """Add a container's methods (children of `body` that `reader` recognises) as members."""
    if body is None or not owner:
        return span
    children = body.children
    for i, child in enumerate(children):
        member = reader(child)
        if member is not None and member.name:
            member.start = _attached_start(children, i, language)
            member.symbol = f"{owner}.{member.name}"
            span.members.append(member)
    return span


# --- Python -----------------------------------------------------------------------------------


def _python(node) -> Span | None:
    target = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
    if target is None:
        return None
    if target.type == "function_definition":
        kind = "async def" if _text(target).startswith("async") else "def"
        return _span(node, kind, _name(target))
    if target.type == "class_definition":
        name = _name(target)
        return _with_members(
            _span(node, "class", name), name, target.child_by_field_name("body"), _python_member, "python"
        )
    return None


def _python_member(node) -> Span | None:
    target = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
    if target is not None and target.type == "function_definition":
        return _span(node, "def", _name(target))
    return None


# --- JavaScript and TypeScript ------------------------------------------------------------------

_JS_KINDS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
    "module": "namespace",
}
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


def _js(node) -> Span | None:
    target = node
    if node.type == "export_statement":
        target = node.child_by_field_name("declaration")
        if target is None:
            value = node.child_by_field_name("value")
            if value is not None and value.type in ("class", "function_expression", "function"):
                return _span(node, "export default", _name(value))
            return _span(node, "export default", None) if "default" in _text(node)[:20] else None
    if target.type in _JS_KINDS:
        name = _name(target)
        span = _span(node, _JS_KINDS[target.type], name)
        if span.kind == "class":
            return _with_members(span, name, target.child_by_field_name("body"), _js_member, "javascript")
        return span
    if target.type in ("lexical_declaration", "variable_declaration"):
        for declarator in target.named_children:
            value = declarator.child_by_field_name("value")
            if (
                declarator.type == "variable_declarator"
                and value is not None
                and value.type in _FUNCTION_VALUES
            ):
                return _span(node, _text(target).split(None, 1)[0], _name(declarator))
    return None


def _js_member(node) -> Span | None:
    if node.type in ("method_definition", "method_signature", "abstract_method_signature"):
        return _span(node, "method", _name(node))
    return None


# --- Go -----------------------------------------------------------------------------------------

_RECEIVER = re.compile(r"\*?\s*([A-Za-z_]\w*)")


def _go(node) -> Span | None:
    if node.type == "function_declaration":
        return _span(node, "func", _name(node))
    if node.type == "method_declaration":
        receiver = node.child_by_field_name("receiver")
        types = [p.child_by_field_name("type") for p in receiver.named_children] if receiver else []
        owner = _RECEIVER.search(_text(types[0])) if types and types[0] is not None else None
        name = _name(node)
        symbol = f"{owner.group(1)}.{name}" if owner else name
        return Span(node.start_point[0], node.end_point[0], "func", symbol, symbol)
    if node.type in ("type_declaration", "var_declaration", "const_declaration"):
        kind = node.type.split("_")[0]
        specs = [c for c in node.named_children if c.type.endswith("_spec")]
        grouped = "(" in _text(node).split("\n", 1)[0]
        return _span(node, kind, None if grouped or len(specs) != 1 else _name(specs[0]))
    return None


# --- Rust ---------------------------------------------------------------------------------------

_RUST_KINDS = {
    "function_item": "fn",
    "struct_item": "struct",
    "enum_item": "enum",
    "trait_item": "trait",
    "union_item": "union",
    "mod_item": "mod",
    "type_item": "type",
}


def _rust(node) -> Span | None:
    if node.type in _RUST_KINDS:
        return _span(node, _RUST_KINDS[node.type], _name(node))
    if node.type == "macro_definition":
        return _span(node, "macro_rules!", _name(node))
    if node.type == "impl_item":
        for_type = _text(node.child_by_field_name("type"))
        trait = node.child_by_field_name("trait")
        label = f"{_text(trait)} for {for_type}" if trait is not None else for_type
        owner = re.split(r"[<\s]", for_type.split("::")[-1], maxsplit=1)[0] or None
        span = _span(node, "impl", label or None, owner)
        return _with_members(span, owner, node.child_by_field_name("body"), _rust_member, "rust")
    return None


def _rust_member(node) -> Span | None:
    if node.type == "function_item":
        return _span(node, "fn", _name(node))
    return None


_READERS = {"python": _python, "javascript": _js, "typescript": _js, "go": _go, "rust": _rust}
