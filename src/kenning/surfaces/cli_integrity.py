"""`kenning verify` and `kenning repair`: check an index end to end, and rebuild it from its files.

kenning verify [--full | --sample N] [--quick]   exit 0 when sound, 1 naming each problem
kenning repair [--from PATH...] [--no-embed]     rebuild; the damaged index is kept beside it
"""

from __future__ import annotations

import json
import sys

from kenning.api.index import Index
from kenning.api.settings import load_config, resolve_index_dir
from kenning.integrity import repair, verify
from kenning.integrity.verify import DEFAULT_SAMPLE, VerifyReport
from kenning.places.locate import find_config
from kenning.store import IndexDamaged


def add_integrity_parsers(subparsers, add_common) -> None:
    p = subparsers.add_parser("verify", help="check the index end to end; exit 1 naming what is wrong")
    p.add_argument(
        "--sample",
        type=int,
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"chunks whose postings are rebuilt from their text and compared (default {DEFAULT_SAMPLE})",
    )
    p.add_argument("--full", action="store_true", help="compare the postings of every chunk")
    p.add_argument("--quick", action="store_true", help="SQLite's quick_check instead of integrity_check")
    add_common(p)
    p = subparsers.add_parser(
        "repair", help="rebuild the index from its files; the damaged one is kept beside it"
    )
    p.add_argument(
        "--from",
        dest="sources",
        nargs="+",
        metavar="PATH",
        help="folders or files to rebuild from (needed when the index cannot say which)",
    )
    p.add_argument("--no-embed", action="store_true", help="do not embed chunks whose vector was lost")
    p.add_argument("--force", action="store_true", help="rebuild even when `kenning verify` finds it sound")
    add_common(p)


def cmd_verify(args, progress) -> int:
    if args.sample is not None and args.sample < 0:
        raise ValueError(f"--sample must be 0 or more, got {args.sample}")
    try:
        index = Index(_index_dir(args), create=False)
    except IndexDamaged as exc:  # a record every check needs (the analyzer's) cannot be read
        report = VerifyReport(index=str(_index_dir(args)))
        report.add("meta", str(exc))
    else:
        with index, progress(not args.quiet and not args.json, "verifying") as bar:
            tell = (lambda stage, done, total: bar(stage, done, total)) if bar else None
            report = verify(index.store, index.analyzer, None if args.full else args.sample, args.quick, tell)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0 if report.ok else 1
    checked = ", ".join(f"{n} {what}" for what, n in report.checked.items())
    for problem in report.problems:
        print(f"  {problem.stage}: {problem.message}")
    for stage, n in report.more.items():
        print(f"  {stage}: ... and {n} more")
    for note in report.notes:
        print(f"  note: {note}")
    if report.ok:
        print(f"ok: {report.index} is sound ({checked}) in {report.seconds:.2f} s")
        return 0
    total = len(report.problems) + sum(report.more.values())
    print(
        f"damaged: {report.index} has {total} problem(s) ({checked} checked); "
        "`kenning repair` rebuilds it from its files",
        file=sys.stderr,
    )
    return 1


def cmd_repair(args, progress) -> int:
    with progress(not args.quiet and not args.json, "re-indexing") as bar:
        report = repair(_index_dir(args), args.sources, not args.no_embed, bar, force=args.force)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    if report.sound:
        print(
            f"nothing to repair: {report.index} is sound (`kenning verify` found no problem); "
            "`kenning repair --force` rebuilds it anyway"
        )
        return 0
    print(
        f"repaired {report.index}: {report.files_reindexed} file(s) indexed again, {report.chunks} chunks; "
        f"{report.vectors_kept} vector(s) kept, {report.vectors_embedded} embedded again, "
        f"{report.vectors_dropped} damaged vector(s) dropped; {report.glossary_terms} glossary term(s) kept"
    )
    print(f"  the damaged index was moved to {report.moved_aside} (delete it when you are satisfied)")
    for path in report.files_gone:
        print(f"  dropped: {path} (the file is gone)")
    for path, error in report.files_failed:
        print(f"  failed: {path}: {error}", file=sys.stderr)
    for what in report.unreadable:
        print(f"  could not be read from the damaged index: {what}", file=sys.stderr)
    for note in report.notes:
        print(f"  note: {note}", file=sys.stderr if "could not be read" in note else sys.stdout)
    return 0


def _index_dir(args):
    return resolve_index_dir(args.index, load_config(find_config()))
