"""The `kenning` command: a thin shell over kenning.Index and kenning.eval.

Every command takes --json (machine output on stdout) and --index DIR (else $KENNING_INDEX, else
./.kenning). Errors go to stderr as one line naming the file or value at fault, exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from pathlib import Path

from kenning import __version__
from kenning.api.index import SEARCH_MODES, Index
from kenning.api.request import build_request, knob_names
from kenning.api.settings import (
    ConfigError,
    load_config,
    resolve_index_dir,
    resolve_search,
    search_keys,
)
from kenning.eval import DatasetError, evaluate, known_item, open_eval_index
from kenning.indexing.reports import display_path
from kenning.ingest.chunk import IngestError
from kenning.ingest.limits import DEFAULT_MAX_FILE_BYTES, byte_size
from kenning.lexical.bm25 import COORDINATIONS, VARIANTS, Bm25Params
from kenning.models.embed.base import EmbedderError
from kenning.models.rerankers import RerankError
from kenning.places.locate import find_config
from kenning.query.filters import DEFAULT_COLLECTION, KINDS, Filters
from kenning.search.fusion import FUSIONS, INT_KNOBS, FusionParams, fusion_knobs
from kenning.search.postprocess import PostprocessOptions
from kenning.store import StorageError
from kenning.store.errors import engine_errors
from kenning.surfaces.cli_collections import add_collections_parser, cmd_collections
from kenning.surfaces.cli_glossary import add_glossary_parser, cmd_glossary
from kenning.surfaces.cli_graph import add_graph_parser, cmd_graph
from kenning.surfaces.cli_integrity import add_integrity_parsers, cmd_repair, cmd_verify
from kenning.surfaces.cli_migrate import add_migrate_parser, cmd_migrate
from kenning.surfaces.render import (
    FORMATS,
    Style,
    answer_text,
    date_of,
    json_text,
    render_documents,
    render_search,
)
from kenning.surfaces.terminal import SafeStream, visible


def _byte_size(text: str) -> int:
    try:
        return byte_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _whole_number(low: int):
    """An argparse type: a whole number of at least `low`, else a message naming the bound."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {low} or more, got {value}")
        return value

    return parse


_positive_int, _non_negative_int = _whole_number(1), _whole_number(0)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--index", metavar="DIR", help="index directory (default: $KENNING_INDEX or ./.kenning)")
    p.add_argument(
        "--store",
        dest="index",
        metavar="URL",
        help="a PostgreSQL index instead, postgresql://user@host:port/db[?schema=NAME] (or $KENNING_STORE)",
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


KNOB_HELP = {
    "variant": "BM25 variant",
    "k1": "term-frequency saturation",
    "b": "length normalisation 0..1",
    "delta": "BM25+/BM25L delta",
    "title_weight": "weight of heading-path matches",
    "body_weight": "weight of body matches",
    "coord_floor": "coordination floor 0..1; 1 disables it",
    "k3": "query term frequency saturation (0: each distinct term once)",
    "coordination": "what the coordination counts: matched clauses, or their idf",
}


def _add_knobs(p: argparse.ArgumentParser) -> None:
    """Every BM25 knob as a flag. Unset flags fall back to the environment, kenning.toml, then defaults."""
    defaults = Bm25Params()
    g = p.add_argument_group("lexical scoring (BM25) knobs")
    for name, text in KNOB_HELP.items():
        default = getattr(defaults, name)
        kind = {"type": float}
        if name in ("variant", "coordination"):
            kind = {"choices": VARIANTS if name == "variant" else COORDINATIONS}
        g.add_argument(
            f"--{name.replace('_', '-')}", default=None, help=f"{text} (default {default})", **kind
        )


def _add_fusion(p: argparse.ArgumentParser) -> None:
    """Search mode, fusion mode and every fusion knob; unset flags fall back like the BM25 knobs."""
    g = p.add_argument_group("channels and fusion (signal weights and knobs come from the registry)")
    g.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        default=None,
        help="lexical, dense or hybrid (default auto: hybrid when the index has vectors)",
    )
    default_fusion = FusionParams().mode
    g.add_argument(
        "--fusion", choices=FUSIONS, default=None, help=f"how channels combine (default {default_fusion})"
    )
    for name, (default, text) in fusion_knobs().items():
        g.add_argument(
            f"--{name.replace('_', '-')}",
            type=int if name in INT_KNOBS else float,
            default=None,
            help=f"{text} (default {default})",
        )
    g.add_argument("--embedder", metavar="SPEC", help="query embedder (must match the index's vectors)")


def _add_post(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("after fusion (each optional, each explained)")
    g.add_argument(
        "--recency", type=float, metavar="LAMBDA", help="multiply scores by 1/(1 + LAMBDA * age_days)"
    )
    g.add_argument("--mmr", type=float, metavar="LAMBDA", help="maximal marginal relevance (0.7 is typical)")
    g.add_argument(
        "--dedup",
        type=float,
        default=0.5,
        metavar="SHARE",
        help="drop a chunk whose lines or messages are this share already shown (default 0.5)",
    )
    g.add_argument("--no-dedup", action="store_true", help="keep overlapping chunks")
    g.add_argument(
        "--diversity",
        type=float,
        metavar="PENALTY",
        help="multiply each further result from the same file or conversation by PENALTY (after 2)",
    )
    g.add_argument("--cap", type=int, metavar="N", help="at most N results per document")
    g.add_argument(
        "--rerank",
        metavar="SPEC",
        help="rerank a pool of max(3 x limit, 30): cross-encoder:DIR, openai:MODEL@URL, ollama:MODEL@URL",
    )


def _post(args) -> PostprocessOptions:
    if args.dedup is not None and not 0 < args.dedup <= 1:
        raise ValueError(f"--dedup must be between 0 and 1, got {args.dedup}")
    return PostprocessOptions(
        recency_lambda=args.recency,
        mmr_lambda=args.mmr,
        dedup_threshold=None if args.no_dedup else args.dedup,
        diversity_penalty=args.diversity,
        cap=args.cap,
    )


def _add_filters(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scopes and filters")
    g.add_argument(
        "-c",
        "--collection",
        action="append",
        metavar="NAME",
        help="search only these collections (repeatable)",
    )
    g.add_argument(
        "--path", action="append", metavar="GLOB", help="only files whose path matches (repeatable)"
    )
    g.add_argument("--type", action="append", choices=KINDS, help="only this kind of file (repeatable)")
    g.add_argument(
        "--since", metavar="WHEN", help="document time at or after WHEN (2026-01-31, or an age: 7d, 2w)"
    )
    g.add_argument("--before", metavar="WHEN", help="document time before WHEN")
    g.add_argument(
        "--meta", action="append", metavar="KEY=VALUE", help="front matter KEY equals VALUE (repeatable)"
    )


def _filters(args) -> Filters:
    return Filters.parse(args.collection, args.path, args.type, args.since, args.before, args.meta, "--")


def _settings(args) -> dict:
    """Search settings from flags, then environment, then kenning.toml (see kenning.api.settings)."""
    flags = {key: getattr(args, key, None) for key in search_keys()}
    return resolve_search(flags, load_config(find_config()))


def _scoring(settings: dict):
    """(Bm25Params, FusionParams) from the settings' knobs, read as every search reads them."""
    names = set(knob_names())
    request = build_request("", **{k: v for k, v in settings.items() if k in names})
    return request.params, request.fusion


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kenning", description="Local-first search that explains its ranking."
    )
    parser.add_argument("--version", action="version", version=f"kenning {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="index files and folders (incremental)")
    p.add_argument("paths", nargs="*", help="files or folders (default: the collections in kenning.toml)")
    p.add_argument(
        "--include", action="append", metavar="GLOB", help="only index matching files (repeatable)"
    )
    p.add_argument(
        "--exclude", action="append", metavar="GLOB", help="skip matching files/folders (repeatable)"
    )
    p.add_argument("--force", action="store_true", help="rebuild the index from scratch")
    p.add_argument(
        "--no-stem",
        action="store_true",
        help="turn Snowball stemming off (needs --force on an existing index)",
    )
    p.add_argument(
        "-c", "--collection", default=DEFAULT_COLLECTION, help="collection to index into (default 'default')"
    )
    p.add_argument("--no-embed", action="store_true", help="skip embedding (run `kenning embed` later)")
    p.add_argument(
        "--include-secrets",
        action="store_true",
        help="also index files that hold credentials (.env, private keys, .netrc, ...): skipped by default",
    )
    p.add_argument(
        "--follow-symlinks", action="store_true", help="follow links that lead outside the indexed folders"
    )
    p.add_argument("--hidden", action="store_true", help="also index hidden files and folders (.name)")
    p.add_argument(
        "--max-file-bytes",
        type=_byte_size,
        default=DEFAULT_MAX_FILE_BYTES,
        metavar="SIZE",
        help="skip files larger than this, unread (default 64M; K, M, G suffixes)",
    )
    p.add_argument(
        "--substring-index",
        action="store_true",
        help="keep a trigram index for the substring signal (--w-substring) from now on, instead of "
        "joining every chunk's text in memory at search time (about the text's size on disk)",
    )
    p.add_argument(
        "--embedder", metavar="SPEC", help="embedder for new vectors (default: the index's, else minilm)"
    )
    _add_common(p)

    p = sub.add_parser("embed", help="embed chunks that have no vector yet (resumable)")
    p.add_argument(
        "--embedder", metavar="SPEC", help="minilm (default), st:DIR, openai:MODEL@URL, ollama:MODEL@URL"
    )
    p.add_argument(
        "--replace", action="store_true", help="switch the index to another embedder, re-embedding all"
    )
    p.add_argument("--batch-size", type=int, default=32, help="texts per embedder call (default 32)")
    p.add_argument(
        "--limit", type=int, default=None, help="embed at most N chunks, shortest first; rerun for the rest"
    )
    _add_common(p)

    p = sub.add_parser("search", help="search the index")
    p.add_argument("query", nargs="+", help="the query (words may stand unquoted; -word excludes)")
    p.add_argument("-n", "--limit", type=int, default=None, help="number of results (default 10)")
    p.add_argument("--explain", action="store_true", help="show the funnel and every score component")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (default), json (as --json), md, csv, or files (one path per line)",
    )
    p.add_argument("--strict", action="store_true", default=None, help="every plain word is required (AND)")
    p.add_argument("--spell", action="store_true", help="correct words that no chunk holds, and say so")
    p.add_argument(
        "--no-relax",
        action="store_true",
        help="keep an empty result when phrases, +words or -words leave nothing (default: relax, marked)",
    )
    _add_filters(p)
    _add_common(p)
    _add_knobs(p)
    _add_fusion(p)
    _add_post(p)

    p = sub.add_parser(
        "get", help="print a document once, lines numbered: PATH, PATH:START-END, a document id, or chunk:ID"
    )
    p.add_argument(
        "ref", help="notes/a.md, notes/a.md:10-20 (those lines), a document id, or chunk:ID from a search hit"
    )
    p.add_argument(
        "--max-chars",
        type=_positive_int,
        metavar="N",
        help="print at most N characters of text, and the --offset that reads on (default: all)",
    )
    p.add_argument(
        "--offset", type=_non_negative_int, default=0, metavar="N", help="skip the document's first N lines"
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "md", "files"),
        default="text",
        help="text (numbered lines), json, md (Markdown), or files (the path only)",
    )
    _add_common(p)

    p = sub.add_parser("multi-get", help="print several documents: a glob over indexed paths, or refs")
    p.add_argument("refs", nargs="+", metavar="GLOB_OR_REF")
    p.add_argument("--max-chars", type=int, default=50_000, help="stop adding documents past this size")
    p.add_argument("--format", choices=("text", "json", "md", "files"), default="text")
    _add_common(p)

    p = sub.add_parser("answer", help="answer a question with citations, or say what the sources do not say")
    p.add_argument("question", nargs="+")
    p.add_argument(
        "--llm",
        help="chat model: openai:MODEL[@URL], ollama:MODEL[@URL], llama-cpp:FILE.gguf "
        "(default $KENNING_LLM, else extractive: the best supporting sentences)",
    )
    p.add_argument(
        "--candidates", type=int, default=20, help="passages to weigh (10 to 20 are read; default 20)"
    )
    _add_common(p)

    p = sub.add_parser("status", help="what the index holds")
    _add_common(p)

    p = sub.add_parser("eval", help="nDCG@10, Recall@100, MRR@10 and QPS on a BEIR-layout dataset")
    p.add_argument(
        "dataset",
        help="directory with corpus.jsonl, queries.jsonl, qrels/test.tsv (any files with --known-item)",
    )
    p.add_argument("--no-stem", action="store_true", help="evaluate without stemming")
    p.add_argument("--per-query", action="store_true", help="include per-query metrics in --json")
    p.add_argument(
        "--dialect",
        action="store_true",
        help="send queries through kenning's query language (default: plain text, as peers receive them)",
    )
    p.add_argument(
        "--known-item",
        type=int,
        metavar="N",
        help="paste N sentences sampled from the corpus (a BEIR folder, or any files) back as queries: "
        "Hit@1 of the chunk holding each, in the default mode unless --mode says",
    )
    p.add_argument("--seed", type=int, default=0, help="sampling seed for --known-item (default 0)")
    _add_common(p)
    _add_knobs(p)
    _add_fusion(p)
    add_glossary_parser(sub, _add_common)
    add_integrity_parsers(sub, _add_common)
    add_migrate_parser(sub)
    add_collections_parser(sub, _add_common)
    add_graph_parser(sub, _add_common)

    p = sub.add_parser(
        "serve", help="keep the index warm: JSON API, web page and MCP over HTTP; the CLI uses it"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=7474, help="port (default 7474; 0 picks a free one)")
    p.add_argument("--allow-write", action="store_true", help="allow indexing and glossary curation")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients use to reach this server, as kb.lan (repeatable; also "
        "KENNING_SERVE_HOSTS=a,b). On --host 0.0.0.0 the address a client connected to is answered "
        "too; requests naming any other host are refused (DNS-rebinding protection)",
    )
    p.add_argument(
        "--watch", nargs="+", metavar="PATH", help="also re-index these files and folders when they change"
    )
    _add_common(p)

    p = sub.add_parser("watch", help="re-index files and folders whenever they change (Ctrl-C stops)")
    p.add_argument("paths", nargs="+", help="files or folders to watch and index")
    _add_common(p)

    p = sub.add_parser("mcp", help="serve the index to AI agents over MCP (stdio)")
    p.add_argument("--allow-write", action="store_true", help="also offer the index and glossary_add tools")
    _add_common(p)
    return parser


@contextmanager
def _progress(enabled: bool, label: str):
    """A rich progress bar on stderr when it is a terminal; otherwise nothing."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    stream = getattr(sys.stderr, "wrapped", sys.stderr)  # rich writes its own escapes: the names are made
    with Progress(  # visible above, and rich markup in them escaped
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[file]}"),
        transient=True,
        console=Console(file=stream),
    ) as bar:
        task = bar.add_task(label, total=None, file="")

        def update(name: str, n: int, total: int) -> None:
            bar.update(task, completed=n, total=total, file=escape(visible(name[-60:])))

        yield update


_WARM: ContextVar[Index | None] = ContextVar("warm_index", default=None)  # set inside `kenning serve`


def _open(args, create: bool = False, rebuild_outdated: bool = False):
    """The index a command works on: the server's warm one when the command runs inside `kenning
    serve` (left open afterwards), else a fresh one for this command."""
    warm = _WARM.get()
    if warm is not None:
        return nullcontext(warm)
    return Index(resolve_index_dir(args.index, load_config(find_config())), create, rebuild_outdated)


def _emit_json(data) -> None:
    print(json_text(data))


def _index_jobs(args) -> list[tuple[list, list | None, list | None, str]]:
    """(paths, include, exclude, collection) per run: the paths given, or kenning.toml's collections."""
    if args.paths:
        return [(args.paths, args.include, args.exclude, args.collection)]
    config = load_config(find_config())
    if not config.collections:
        raise ConfigError("give paths to index, or define [collections.NAME] paths = [...] in kenning.toml")
    return [
        (c.paths, (args.include or []) + c.include or None, (args.exclude or []) + c.exclude or None, c.name)
        for c in config.collections.values()
    ]


def cmd_index(args) -> int:
    jobs = _index_jobs(args)
    reports = []
    with _open(args, create=True, rebuild_outdated=args.force) as index:
        for paths, include, exclude, collection in jobs:
            with _progress(not args.quiet and not args.json, f"indexing {collection}") as cb:
                reports.append(
                    index.add(
                        paths,
                        include=include,
                        exclude=exclude,
                        force=args.force,
                        stem=False if args.no_stem else None,
                        progress=cb,
                        collection=collection,
                        include_secrets=args.include_secrets,
                        follow_symlinks=args.follow_symlinks,
                        hidden=args.hidden,
                        substring_index=args.substring_index,
                        max_file_bytes=args.max_file_bytes,
                    )
                )
        report = reports[0]
        for extra in reports[1:]:
            report.merge(extra)
        embedded = None if args.no_embed else _run_embed(index, args, args.embedder, replace=False)
    if args.json:
        _emit_json({**report.to_dict(), "embedding": embedded.to_dict() if embedded else None})
    else:
        if embedded is not None and embedded.total:
            rate = f"{embedded.per_second:.1f} chunks/s"
            print(
                f"embedded {embedded.embedded} chunk(s) with {embedded.model} in {embedded.seconds:.1f} s "
                f"({rate})"
            )
        if report.substring_indexed:
            print(f"substring index: on, {report.substring_indexed} stored chunk(s) indexed")
        reasons = ", ".join(f"{n} {why}" for why, n in report.skip_reasons().items())
        print(
            f"indexed {report.files_indexed} file(s), {report.files_unchanged} unchanged, "
            f"{len(report.skipped)} skipped{f' ({reasons})' if reasons else ''}, "
            f"{len(report.errors)} failed; {report.chunks_added} chunks added, {report.chunks_kept} kept, "
            f"{report.chunks_removed} removed ({report.files_removed} file(s) gone) in {report.seconds:.2f} s"
        )
        for path, error in report.errors:
            print(
                f"  failed: {error}" if error.startswith(path) else f"  failed: {path}: {error}",
                file=sys.stderr,
            )
        _print_capped("skipped", [f"{path}: {why}" for path, why in report.skipped])
        _print_capped("warning", report.warnings)
    if report.missing:
        print(f"kenning: error: cannot read {', '.join(report.missing)}", file=sys.stderr)
        return 1
    return 0


def _print_capped(label: str, lines: list[str], cap: int = 20) -> None:
    """Name what happened to each file on stderr, the first `cap` of them (--json has them all)."""
    for line in lines[:cap]:
        print(f"  {label}: {line}", file=sys.stderr)
    if len(lines) > cap:
        print(f"  ... {len(lines) - cap} more ({label}; see --json)", file=sys.stderr)


def _run_embed(index, args, spec, replace: bool, batch_size: int = 32, limit: int | None = None):
    """Embed what has no vector yet, with a progress bar that shows chunks per second."""
    with _progress(not args.quiet and not args.json, "embedding") as bar:

        def update(done: int, total: int, rate: float) -> None:
            if bar:
                bar(f"{rate:.1f} chunks/s", done, total)

        return index.embed(spec, batch_size=batch_size, progress=update, replace=replace, limit=limit)


def cmd_embed(args) -> int:
    with _open(args) as index:
        report = _run_embed(index, args, args.embedder, args.replace, args.batch_size, args.limit)
    if args.json:
        _emit_json(report.to_dict())
    else:
        print(
            f"embedded {report.embedded} of {report.total} chunk(s) needing vectors with {report.model} "
            f"({report.backend}) in {report.seconds:.1f} s, {report.per_second:.1f} chunks/s"
        )
        if report.remaining:
            print(f"{report.remaining} chunk(s) still need vectors: run `kenning embed` again")
    return 0


def cmd_search(args) -> int:
    settings = _settings(args)
    request = build_request(  # bad knobs and filters are refused before the index is touched
        " ".join(args.query),
        post=_post(args),
        filters=_filters(args),
        explain=args.explain,
        spell=args.spell,
        relax=not args.no_relax,
        rerank=args.rerank,
        embedder=args.embedder,
        **settings,
    )
    with _open(args) as index:
        response = index.search(request)
    fmt = "json" if args.json else args.format
    print(render_search(response, fmt, Style(sys.stdout), args.explain, display_path))
    return 0


def cmd_answer(args) -> int:
    if args.candidates < 1:
        raise ValueError("--candidates must be 1 or more")
    with _open(args) as index:
        result = index.answer(" ".join(args.question), llm=args.llm, candidates=args.candidates)
    if args.json:
        _emit_json(result.to_dict())
        return 0
    print(answer_text(result.to_dict()))
    print("queries: " + "; ".join(f"{q['angle']}: {q['query']!r}" for q in result.queries))
    return 0


def cmd_get(args) -> int:
    with _open(args) as index:
        document = index.read(args.ref, max_chars=args.max_chars, offset=args.offset)
    if document is None:
        print(
            f"kenning: error: nothing indexed under {args.ref!r} (give a file path, a path with lines "
            "such as notes/a.md:10-20, a document id, or chunk:ID)",
            file=sys.stderr,
        )
        return 2
    fmt = "json" if args.json else args.format
    print(render_documents([document], fmt, Style(sys.stdout), display_path))
    return 0


def cmd_multi_get(args) -> int:
    refs = args.refs[0] if len(args.refs) == 1 and any(c in args.refs[0] for c in "*?[") else args.refs
    with _open(args) as index:
        found = index.read_many(refs, max_chars=args.max_chars)
    fmt = "json" if args.json else args.format
    extra = {k: v for k, v in found.items() if k != "documents"}
    print(render_documents(found["documents"], fmt, Style(sys.stdout), display_path, extra))
    return 0 if found["documents"] else 2


def cmd_mcp(args) -> int:
    from kenning.surfaces.mcp_server import serve_stdio  # the MCP SDK loads only for this command
    from kenning.surfaces.service import Service

    service = Service(resolve_index_dir(args.index, load_config(find_config())), args.allow_write)
    try:
        serve_stdio(service)
    finally:
        service.close()
    return 0


def cmd_serve(args) -> int:
    from kenning.surfaces.server_process import run_server  # the web stack loads only for this command

    index_dir = resolve_index_dir(args.index, load_config(find_config()))
    named = (h.strip() for h in os.environ.get("KENNING_SERVE_HOSTS", "").split(","))
    hosts = [*args.allow_host, *filter(None, named)]
    return run_server(
        index_dir,
        args.host,
        args.port,
        args.allow_write,
        args.watch,
        quiet=args.quiet,
        allowed_hosts=hosts,
        run_command=main,
    )


def cmd_watch(args) -> int:
    from kenning.surfaces.service import Service
    from kenning.surfaces.watch import Watcher

    def said(report, embedded) -> None:
        if args.json:
            print(json_text({**report.to_dict(), "embedding": embedded.to_dict() if embedded else None}))
            return
        vectors = f", {embedded.embedded} embedded" if embedded and embedded.embedded else ""
        print(
            f"{time.strftime('%H:%M:%S')} indexed {report.files_indexed} file(s), {report.chunks_added} "
            f"chunks added, {report.chunks_removed} removed{vectors}",
            flush=True,
        )

    service = Service(resolve_index_dir(args.index, load_config(find_config())), allow_write=True)
    try:
        watcher = Watcher(service, args.paths, on_update=said)
        watcher.update()  # catch up with what changed while nobody watched
        if not args.quiet:
            print(
                f"watching {', '.join(display_path(p) for p in watcher.paths)} (Ctrl-C stops)",
                file=sys.stderr,
            )
        watcher.run()
    finally:
        service.close()
    return 0


def cmd_status(args) -> int:
    with _open(args) as index:
        status = index.status()
    if args.json:
        _emit_json(status)
        return 0
    last = date_of(status["last_commit"], "%Y-%m-%d %H:%M:%S") or "never"
    print(f"index        {status['index']}")
    print(f"documents    {status['documents']}  (files: {status['sources']})")
    print(f"chunks       {status['chunks']}  in {status['segments']} segment(s)")
    for name, counts in status["collections"].items():
        print(f"  {name:<10} {counts['files']} file(s), {counts['chunks']} chunks")
    print(f"terms        {status['terms']}")
    print(f"size         {status['size_bytes'] / 1e6:.2f} MB")
    print(f"committed    {last}  (generation {status['generation']})")
    print(f"analyzer     stemming {'on' if status['analyzer']['stem'] else 'off'}")
    if status["substring_index"]:
        print("substrings   trigram index (the substring signal reads it instead of the texts in memory)")
    vectors = status["embedder"]
    if vectors is None:
        print("vectors      none: searches are lexical only (`kenning embed` adds them)")
    else:
        have, total = vectors["vectors"], vectors["vectors"] + vectors["missing"]
        share = f"{100 * have / total:.0f}%" if total else "-"
        model = f"{vectors['model']} ({vectors['backend']}, {vectors['dim']}-d)"
        print(f"vectors      {model}: {have} of {total} chunks ({share})")
        if vectors["missing"]:
            print(f"             {vectors['missing']} chunk(s) have no vector yet: `kenning embed` adds them")
    return 0


@contextmanager
def _corpus_progress(args):
    """(indexing progress, embedding progress) callbacks for eval's two bars (None when quiet)."""
    show = not args.quiet and not args.json
    with _progress(show, "indexing corpus") as cb, _progress(show, "embedding corpus") as embed_bar:

        def embed_progress(done: int, total: int, rate: float) -> None:
            if embed_bar:
                embed_bar(f"{rate:.1f} chunks/s", done, total)

        yield cb, embed_progress


def cmd_known_item(args, settings: dict) -> int:
    """Sentences from the corpus pasted back as queries, in the default mode unless --mode says."""
    target = Path(args.dataset)
    if not target.exists():
        raise DatasetError(f"{target}: no such file or folder")
    corpus = target / "corpus.jsonl" if (target / "corpus.jsonl").is_file() else target
    mode = settings.get("mode") or "auto"
    params, fusion = _scoring(settings)
    with _corpus_progress(args) as (cb, embed_progress):
        index, _, _ = open_eval_index(
            corpus, target, args.index, not args.no_stem, cb, mode, args.embedder, embed_progress
        )
    with index:
        report = known_item(
            index,
            n=args.known_item,
            seed=args.seed,
            mode=mode,
            syntax="dialect" if args.dialect else "plain",
            fusion=fusion,
            params=params,
        )
    if args.json:
        _emit_json(report.to_dict())
        return 0
    print(
        f"corpus       {target}  ({report.queries} pasted sentences, mode {report.mode}, seed {report.seed})"
    )
    print(f"Hit@1        {report.hit_at_1:.4f}")
    print(f"MRR@10       {report.mrr_at_10:.4f}")
    for miss in report.misses[:10]:
        where = f"rank {miss['rank']}" if miss["rank"] else "not in the top 10"
        print(f"  {where}: {miss['query'][:90]}")
    return 0


def cmd_eval(args) -> int:
    settings = _settings(args)
    if args.known_item:
        return cmd_known_item(args, settings)
    mode = settings.get("mode") or "lexical"
    if mode == "auto":
        mode = "lexical"
    with _corpus_progress(args) as (cb, embed_progress):
        params, fusion = _scoring(settings)
        report = evaluate(
            args.dataset,
            params=params,
            index_dir=args.index,
            stem=not args.no_stem,
            progress=cb,
            mode=mode,
            fusion=fusion,
            embedder=args.embedder,
            embed_progress=embed_progress,
            syntax="dialect" if args.dialect else "plain",
        )
    if args.json:
        _emit_json(report.to_dict(per_query=args.per_query))
        return 0
    fusion = f", fusion {report.fusion['mode']}" if report.fusion else ""
    print(f"dataset      {report.dataset}  ({report.queries} judged queries, mode {report.mode}{fusion})")
    print(f"nDCG@10      {report.ndcg_at_10:.4f}")
    print(f"Recall@100   {report.recall_at_100:.4f}")
    print(f"MRR@10       {report.mrr_at_10:.4f}")
    print(f"QPS          {report.qps:.1f}  (one query at a time, top 100)")
    print(f"index        {report.index_seconds:.2f} s  ({report.index_dir})")
    print(f"failed       {len(report.failures)} of {report.queries} queries (each scored zero)")
    for qid, error in report.failures.items():
        print(f"  query {qid}: {error}")
    return 0


COMMANDS = {
    "index": cmd_index,
    "search": cmd_search,
    "get": cmd_get,
    "multi-get": cmd_multi_get,
    "status": cmd_status,
    "eval": cmd_eval,
    "embed": cmd_embed,
    "glossary": cmd_glossary,
    "verify": lambda args: cmd_verify(args, _progress),
    "collections": lambda args: cmd_collections(args, _open),
    "graph": lambda args: cmd_graph(args, _open),
    "answer": cmd_answer,
    "mcp": lambda args: cmd_mcp(args),
    "serve": lambda args: cmd_serve(args),
    "watch": lambda args: cmd_watch(args),
    "repair": lambda args: cmd_repair(args, _progress),
    "migrate": lambda args: cmd_migrate(args, _progress),
}


def _query_words_last(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`kenning search -Zürich museum`: a word that starts with `-` but is no option of `search` is
    part of the query (an exclusion), not an unknown option. Options are the exact flag names,
    `--flag=value`, and a short number flag with its number attached (`-n5`); everything else that
    starts with `-` moves behind `--`, where argparse reads it as query text."""
    if not argv or argv[0] != "search":
        return argv
    search = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "search")[1]
    takes_value = {flag: action.nargs != 0 for action in search._actions for flag in action.option_strings}
    numeric = {
        flag
        for action in search._actions
        for flag in action.option_strings
        if action.type in (int, float) and not flag.startswith("--")
    }
    options, words, rest = [], [], list(argv[1:])
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            words.extend(rest)
            break
        flag = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if flag in takes_value:
            options.append(arg)
            if takes_value[flag] and "=" not in arg and rest:
                options.append(rest.pop(0))
        elif arg[:2] in numeric and arg[2:].replace(".", "", 1).isdigit():
            options.append(arg)
        else:
            words.append(arg)
    return ["search", *options, "--", *words] if words else ["search", *options]


# Faults the user can act on: each message names the file, the setting or the server; never a traceback.
USER_ERRORS = (StorageError, DatasetError, ConfigError, ValueError, EmbedderError, RerankError, IngestError)


class _StderrHandler(logging.Handler):
    """Writes to whatever sys.stderr is when the message comes (not when the handler was made)."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"kenning: {record.getMessage()}", file=sys.stderr)


def _log_to_stderr() -> None:
    """What the library says while it works (a writer waiting for another) goes to stderr, once."""
    log = logging.getLogger("kenning")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        log.addHandler(_StderrHandler())
        log.setLevel(logging.INFO)


def main(argv: list[str] | None = None, index: Index | None = None) -> int:
    """Run one command. `index`: an open index to use instead of opening one (a warm server's)."""
    streams = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, SafeStream):  # every byte of text output shows, never commands
        sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)
    try:
        return _main(argv, index)
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv: list[str] | None, index: Index | None) -> int:
    _log_to_stderr()
    parser = build_parser()
    args = parser.parse_args(_query_words_last(parser, list(sys.argv[1:] if argv is None else argv)))
    token = _WARM.set(index)
    try:
        return COMMANDS[args.command](args)
    except USER_ERRORS as exc:
        print(f"kenning: error: {exc}", file=sys.stderr)
        return 2
    except engine_errors() as exc:  # the store's driver failed (kenning.store.errors)
        print(
            f"kenning: error: the index database cannot be read ({exc}); "
            "`kenning verify` says what is wrong and `kenning repair` rebuilds it",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("kenning: interrupted; the index keeps its last committed state", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader stopped early (`kenning search q | head -1`): nothing went wrong, so say nothing;
        # stdout goes to /dev/null so the interpreter's final flush cannot complain either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        _WARM.reset(token)


if __name__ == "__main__":
    sys.exit(main())
