"""`kenning glossary ...`: curate the alias groups that expand queries.

    kenning glossary add auth authentication sign-in login [--scope NAME]
    kenning glossary ls [--scope NAME] [--all]
    kenning glossary suggest [--limit N]          # mine candidates into the pending queue
    kenning glossary pending                      # what suggest proposed, with its evidence
    kenning glossary approve TERM [--group G]     # G: a group id or canonical term
    kenning glossary reject TERM [--group G]      # never proposed again
    kenning glossary merge SOURCE TARGET
    kenning glossary split TERM [--group G]
    kenning glossary import FILE [--format json|csv]
    kenning glossary export [--format json|csv] [-o FILE]

Every subcommand takes --json and --index DIR. Errors print one line to stderr and exit with 2.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from kenning.api.index import Index
from kenning.api.settings import load_config, resolve_index_dir
from kenning.glossary.glossary import Glossary, GlossaryError
from kenning.places.locate import find_config
from kenning.store import StorageError


def add_glossary_parser(subparsers, add_common) -> None:
    """Register `glossary` and its subcommands on the main parser's subparsers."""
    parser = subparsers.add_parser(
        "glossary",
        help="alias groups that expand queries (add, ls, suggest, pending, approve, reject, ...)",
        description="Alias groups (a canonical term and its aliases) used to expand query words.",
    )
    sub = parser.add_subparsers(dest="glossary_command", required=True, metavar="SUBCOMMAND")

    p = sub.add_parser("add", help="add a group, or aliases to an existing one")
    p.add_argument("canonical", help="the group's canonical term (an existing group is extended)")
    p.add_argument("aliases", nargs="+", metavar="ALIAS", help="other names of the same thing")
    p.add_argument(
        "--scope",
        default=None,
        metavar="NAME",
        help="a collection name (default: kenning.toml's, else global)",
    )
    add_common(p)

    p = sub.add_parser("ls", help="list groups and their members")
    p.add_argument("--scope", default=None, metavar="NAME", help="only this scope ('' for global)")
    p.add_argument("--all", action="store_true", help="also groups that suggest proposed and nobody approved")
    add_common(p)

    p = sub.add_parser("pending", help="suggested terms waiting for approve/reject, with evidence")
    add_common(p)

    for name, text in (
        ("approve", "make a pending term an alias of its group"),
        ("reject", "reject a pending term or an alias; the pair is never proposed again"),
        ("split", "move a term out of its group into a group of its own"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("term")
        p.add_argument(
            "--group", metavar="G", help="the group (id or canonical term) when the term is in several"
        )
        add_common(p)

    p = sub.add_parser("merge", help="move every member of SOURCE into TARGET (ids or canonical terms)")
    p.add_argument("source")
    p.add_argument("target")
    add_common(p)

    p = sub.add_parser("import", help="read groups from a JSON or CSV file (as export writes them)")
    p.add_argument("file")
    p.add_argument("--format", choices=("json", "csv"), help="default: from the file's extension")
    add_common(p)

    p = sub.add_parser("export", help="write every group as JSON or CSV")
    p.add_argument("--format", choices=("json", "csv"), default=None, help="default json (or -o's extension)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    add_common(p)

    p = sub.add_parser("suggest", help="mine candidate synonyms from the index into the pending queue")
    p.add_argument("--limit", type=int, default=50, help="most pending terms to add (default 50)")
    p.add_argument(
        "--scope", default="", metavar="NAME", help="mine one collection; its groups get this scope"
    )
    p.add_argument(
        "--miner",
        action="append",
        choices=("acronym", "names", "morphology", "distributional"),
        help="run only these miners (repeatable; default all)",
    )
    add_common(p)


def _emit_json(data) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _fail(message: str) -> int:
    print(f"kenning: error: {message}", file=sys.stderr)
    return 2


def cmd_glossary(args) -> int:
    handler = _HANDLERS[args.glossary_command]
    try:
        with Index(resolve_index_dir(args.index, load_config(find_config())), create=False) as index:
            glossary = Glossary(index.store, index.analyzer)
            return handler(args, glossary)
    except (GlossaryError, StorageError, ValueError) as exc:
        return _fail(str(exc))


# ---------------------------------------------------------------------------------------------- printing
def _flag(member: dict) -> str:
    return f"  [protected: {member['protected']}]" if member.get("protected") else ""


def _print_group(g: dict) -> None:
    scope = f"scope {g['scope']}" if g["scope"] else "global"
    print(f"#{g['id']}  {g['canonical']}  ({scope})")
    for m in g["members"]:
        origin = ""
        evidence = _evidence_of(m)
        if m["status"] == "pending" and evidence:
            origin = f"  ({evidence.get('kind')} {evidence.get('score')})"
        print(f"      {m['status']:<9}  {m['term']}{_flag(m)}{origin}")


def _print_pending(p: dict) -> None:
    ev = _evidence_of(p)
    group = f"group {p['group']}" + (", new" if p.get("new_group") else "")
    kind = f"  {ev.get('kind')} {ev.get('score')}" if ev else ""
    print(f"{p['term']}  →  {p['canonical']}  ({group}){kind}{_flag(p)}")
    if ev.get("note"):
        print(f"      {ev['note']}")
    examples = ev.get("examples")
    for example in (examples if isinstance(examples, list) else [])[:2]:
        if isinstance(example, dict):
            print(f"      #{example.get('chunk')}: {example.get('text')}")


def _evidence_of(term: dict) -> dict:
    """A term's evidence as the miner writes it (an object), or {}: an imported glossary, or an index
    from elsewhere, may hold any JSON there."""
    evidence = term.get("evidence")
    return evidence if isinstance(evidence, dict) else {}


# ---------------------------------------------------------------------------------------------- handlers
def _add(args, glossary: Glossary) -> int:
    scope = args.scope if args.scope is not None else (load_config(find_config()).glossary_scope or "")
    gid = glossary.add(args.canonical, args.aliases, scope=scope)
    group = next(g for g in glossary.groups(include_proposed=True) if g["id"] == gid)
    if args.json:
        _emit_json(group)
    else:
        _print_group(group)
    return 0


def _ls(args, glossary: Glossary) -> int:
    groups = glossary.groups(scope=args.scope, include_proposed=args.all)
    if args.json:
        _emit_json(groups)
        return 0
    if not groups:
        print(
            "the glossary is empty (add a group with `kenning glossary add`, "
            "or run `kenning glossary suggest`)"
        )
    for g in groups:
        _print_group(g)
    return 0


def _pending(args, glossary: Glossary) -> int:
    pending = glossary.pending()
    if args.json:
        _emit_json(pending)
        return 0
    if not pending:
        print("nothing pending (run `kenning glossary suggest` to mine candidates)")
        return 0
    for p in pending:
        _print_pending(p)
    print(
        f"{len(pending)} pending; approve with `kenning glossary approve TERM`, reject with "
        "`kenning glossary reject TERM` (add --group G when a term is pending in several groups)"
    )
    return 0


def _status_change(verb: str):
    def run(args, glossary: Glossary) -> int:
        if verb == "approve":
            glossary.approve(args.term, args.group)
            result = {"term": args.term, "status": "alias"}
        elif verb == "reject":
            glossary.reject(args.term, args.group)
            result = {"term": args.term, "status": "rejected"}
        else:
            gid = glossary.split(args.term, args.group)
            result = {"term": args.term, "group": gid}
        if args.json:
            _emit_json(result)
        elif verb == "split":
            print(f"{args.term!r} is now the canonical term of its own group #{result['group']}")
        else:
            print(f"{args.term!r}: {result['status']}")
        return 0

    return run


def _merge(args, glossary: Glossary) -> int:
    glossary.merge(args.source, args.target)
    if args.json:
        _emit_json({"merged": args.source, "into": args.target})
    else:
        print(f"merged {args.source!r} into {args.target!r}")
    return 0


def _format_of(path: str, given: str | None) -> str:
    if given:
        return given
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix in ("json", "csv"):
        return suffix
    raise GlossaryError(f"cannot tell the format of {path!r} from its extension: add --format json or csv")


def _import(args, glossary: Glossary) -> int:
    fmt = _format_of(args.file, args.format)
    try:
        text = Path(args.file).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise GlossaryError(f"cannot read {args.file}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        counts = glossary.import_(text, fmt)
    except GlossaryError as exc:
        raise GlossaryError(f"{args.file}: {exc}") from exc
    if args.json:
        _emit_json(counts)
    else:
        print(
            f"imported {args.file}: {counts['groups_created']} group(s) created, "
            f"{counts['terms_added']} term(s) added, {counts['terms_updated']} updated"
        )
    return 0


def _export(args, glossary: Glossary) -> int:
    fmt = args.format or (_format_of(args.output, None) if args.output else "json")
    text = glossary.export(fmt)
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise GlossaryError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
    n = len(glossary.groups(include_proposed=True))
    if args.json:
        _emit_json({"output": args.output, "format": fmt, "groups": n})
    else:
        print(f"wrote {n} group(s) to {args.output} ({fmt})")
    return 0


def _suggest(args, glossary: Glossary) -> int:
    if args.limit < 0:
        raise GlossaryError(f"--limit must be 0 or more, not {args.limit}")
    started = time.perf_counter()
    mined: list = []
    added = glossary.suggest(limit=args.limit, scope=args.scope, miners=args.miner, mined=mined)
    seconds = time.perf_counter() - started
    share = mined[0] if mined else None
    if args.json:
        read = {"chunks": share.chunks, "of": share.of, "documents": share.sources} if share else None
        _emit_json({"added": added, "mined": read, "seconds": round(seconds, 3)})
        return 0
    for a in added:
        _print_pending({**a, "new_group": False, "protected": None})
    if share is not None and share.chunks < share.of:
        print(
            f"mined {share.chunks:,} of {share.of:,} chunks ({share.sources:,} whole documents spread over "
            "the index): mining reads every word, so a large index is sampled"
        )
    print(
        f"{len(added)} suggestion(s) added to the pending queue in {seconds:.1f} s "
        "(see `kenning glossary pending`)"
    )
    return 0


_HANDLERS = {
    "add": _add,
    "ls": _ls,
    "pending": _pending,
    "approve": _status_change("approve"),
    "reject": _status_change("reject"),
    "split": _status_change("split"),
    "merge": _merge,
    "import": _import,
    "export": _export,
    "suggest": _suggest,
}
