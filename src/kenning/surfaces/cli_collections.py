"""`kenning collections`: the indexed roots grouped by name.

kenning collections                     each collection with its files and chunks
kenning collections rename OLD NEW      its glossary scope follows
kenning collections rm NAME             its files leave the index (not the disk)
"""

from __future__ import annotations

import json


def add_collections_parser(subparsers, add_common) -> None:
    parser = subparsers.add_parser("collections", help="list, rename or remove indexed collections")
    sub = parser.add_subparsers(dest="collections_command", metavar="SUBCOMMAND")
    add_common(parser)
    p = sub.add_parser("ls", help="each collection with its files and chunks (the default)")
    add_common(p)
    p = sub.add_parser("rename", help="give a collection another name")
    p.add_argument("old")
    p.add_argument("new")
    add_common(p)
    p = sub.add_parser("rm", help="take a collection's files out of the index (the files stay on disk)")
    p.add_argument("name")
    add_common(p)


def cmd_collections(args, open_index) -> int:
    with open_index(args) as index:
        action = args.collections_command or "ls"
        if action == "rename":
            moved = index.rename_collection(args.old, args.new)
            result = {"renamed": args.old, "to": args.new, "files": moved}
            text = f"renamed collection {args.old!r} to {args.new!r} ({moved} file(s))"
        elif action == "rm":
            report = index.remove_collection(args.name)
            result = {"removed": args.name, "files": report.files_removed, "chunks": report.chunks_removed}
            text = (
                f"removed collection {args.name!r}: "
                f"{report.files_removed} file(s), {report.chunks_removed} chunks"
            )
        else:
            result = index.collections()
            text = "\n".join(
                f"{name:<20} {c['files']:>7} file(s) {c['chunks']:>9} chunks" for name, c in result.items()
            )
            text = text or "no collections yet (kenning index PATH)"
    print(json.dumps(result, indent=2) if args.json else text)
    return 0
