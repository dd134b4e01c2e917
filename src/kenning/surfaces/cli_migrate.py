"""`kenning migrate --from PATH_OR_URL --to PATH_OR_URL`: copy an index between a folder and a
PostgreSQL store, either way, vectors included (kenning.integrity.migrate); exit 1 when the counts of
the copy differ from the original's."""

from __future__ import annotations

import json
import sys

from kenning.integrity.migrate import migrate


def add_migrate_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "migrate", help="copy an index between a folder and PostgreSQL (vectors too), then compare counts"
    )
    p.add_argument("--from", dest="source", required=True, metavar="PATH_OR_URL", help="the index to copy")
    p.add_argument(
        "--to", dest="destination", required=True, metavar="PATH_OR_URL", help="where to (empty or new)"
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def cmd_migrate(args, progress) -> int:
    with progress(not args.quiet and not args.json, "copying") as bar:
        report = migrate(args.source, args.destination, progress=bar)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0 if report.ok else 1
    copied = ", ".join(f"{n} {what}" for what, n in report.copied.items() if not isinstance(n, bool))
    if report.ok:
        print(
            f"copied {report.source} -> {report.destination}: {copied} in {report.seconds:.1f} s;"
            " counts agree"
        )
        return 0
    for what, (mine, theirs) in report.checks.items():
        if mine != theirs:
            print(f"  {what}: {mine} in the original, {theirs} in the copy", file=sys.stderr)
    print(f"the copy in {report.destination} does not match {report.source}", file=sys.stderr)
    return 1
