"""docs/benchmarks.md, generated: kenning against its peers on every dev set, and at scale.

    pip install -e '.[bench]'
    python benchmarks/report.py                 # the six dev sets: kenning's three modes and five peers,
                                                # and warm lexical speed on the three small ones
    python benchmarks/report.py --quick         # cranfield, cacm and med, printed; nothing rewritten
    python benchmarks/report.py --scale 1m      # and a scale tier against tantivy (benchmarks/scale.py)
    python benchmarks/report.py --chat 1m       # and the chat-sized tier against tantivy
    python benchmarks/report.py --render        # the pages again from docs/benchmarks.json, measuring nothing

It writes what it measured to docs/benchmarks.json, then docs/benchmarks.md whole from it, and the
summary between the `benchmarks:` markers in README.md's "How good, how fast". Neither is edited
by hand: what they say is what the last run measured, with the date, the machine, the versions and
the commands. History is in git and CHANGELOG.md.

Every peer row is computed in the same run from the same files, queries sent as plain text and scored
by kenning.eval.ndcg_at (benchmarks/lib/peers.py says how each peer is run).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lib.datasets import DATA, DEV_SETS, ROOT  # noqa: E402
from lib.tables import markdown_table  # noqa: E402
from quality import KENNING, PEERS, folds, margins, quality_rows, with_means  # noqa: E402

SETS = list(DEV_SETS)
QUICK_SETS = ["cranfield", "cacm", "med"]
PACKAGES = ["kenning", "numpy", "onnxruntime", "tokenizers", "usearch", "bm25s", "tantivy"]
README_START, README_END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"


def machine() -> str:
    """CPU model, cores and memory, as /proc says."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        total_kb = next(
            int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )  # fmt: skip
    except (OSError, StopIteration, ValueError):
        total_kb = 0
    system = f"{platform.system()} {platform.release()}"
    return f"{cpu}, {os.cpu_count()} cores, {total_kb / 1024**2:.0f} GB, {system}"


def versions() -> str:
    found = [f"Python {platform.python_version()}"]
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def quality(sets: list[str]) -> dict[str, dict[str, float]]:
    """nDCG@10 of every system, by set."""
    return {name: quality_rows(str(DATA / name)) for name in sets}


def quality_table(table: dict[str, dict[str, float]]) -> list[str]:
    """Every system on every set and its mean, each column's best in bold; then the default's margin
    over its bar."""
    shown = with_means(table)
    columns = list(shown)
    rows = []
    for system in KENNING + PEERS:
        cells = []
        for name in columns:
            value = shown[name][system]
            best = max(shown[name][s] for s in KENNING + PEERS)
            cells.append(f"**{value:.4f}**" if value == best else f"{value:.4f}")
        rows.append([system, *cells])
    rows.append(["default - bar", *(f"{m:+.4f}" for m in margins(table).values()), ""])
    return markdown_table(["system", *columns], rows)


def folds_table(measured: dict) -> list[str]:
    """The leave-one-set-out folds: per held-out set, what was chosen on the others and how it did."""
    rows = []
    for family, by_set in measured["families"].items():
        for name, fold in by_set.items():
            rows.append([family, name, f"{fold['ndcg']:.4f}", f"{fold['margin']:+.4f}", fold["chosen"]])
    header = ["family", "held out", "nDCG@10", "margin over bar", "chosen on the others"]
    return markdown_table(header, rows, "llrrl")


def summary_table(table: dict[str, dict[str, float]]) -> list[str]:
    """kenning's default (hybrid) against the best peer of each set."""
    rows = []
    for name, systems in table.items():
        peer = max(PEERS, key=lambda s: systems[s])
        rows.append([name, f"{systems['kenning hybrid']:.4f}", f"{systems[peer]:.4f}", peer])
    means = with_means(table)["mean"]
    peer = max(PEERS, key=lambda s: means[s])
    rows.append(["mean", f"{means['kenning hybrid']:.4f}", f"{means[peer]:.4f}", peer])
    return markdown_table(["set", "kenning (default)", "best peer", "peer"], rows, align="lrrl")


def scale(tier: str, chat: bool = False) -> dict:
    """benchmarks/scale.py on one tier, kenning against tantivy, in its own processes (`chat`: the
    chat-sized tier, with one 1% re-index)."""
    command = [
        sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--chunks", tier, "--soak", "0", "--json",
    ]  # fmt: skip
    command += (
        ["--shape", "chat", "--reindex-runs", "1", "--reindex-steps", "1"] if chat else ["--no-reindex"]
    )
    return run_tool(command)


def run_tool(command: list[str]) -> dict:
    """A benchmark script run with --json in its own process: the command as a reader reruns it, and
    what it printed."""
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    shown = " ".join(["python", str(Path(command[1]).relative_to(ROOT)), *command[2:]])
    return {"command": shown, "result": json.loads(done.stdout)}


def scale_table(measured: dict) -> list[str]:
    """Index time, memory and size, first and warm query latency, of each system on each tier."""
    header = [
        "system", "chunks", "index s", "index peak RSS MB", "disk MB", "first query p50 ms", "warm p50 ms",
        "warm p95 ms",
    ]  # fmt: skip
    rows = []
    for tier in measured["result"]["tiers"]:
        for system in ("kenning", "tantivy"):
            s = tier.get(system)
            if s:
                rows.append([
                    system, f"{s['chunks']:,}", f"{s['index_s']:.1f}", f"{s['index_tree_peak_mb']:.0f}",
                    f"{s['disk_mb']:.0f}", f"{s['first_p50_ms']:.1f}", f"{s['warm_p50_ms']:.2f}",
                    f"{s['warm_p95_ms']:.2f}",
                ])  # fmt: skip
    return markdown_table(header, rows)


# the chat tier's targets (issue 53): (row, key, format, kenning's ratio to tantivy at most)
CHAT_TARGETS = [
    ("build s", "index_s", "{:.1f}", 1.3),
    ("disk MB", "disk_mb", "{:.0f}", 1.3),
    ("warm p50 ms", "warm_p50_ms", "{:.2f}", 1.0),
    ("warm p95 ms", "warm_p95_ms", "{:.2f}", 1.0),
    ("first query p50 ms", "first_p50_ms", "{:.1f}", 1.0),
    ("warm date-filtered p50 ms", "warm_filtered_p50_ms", "{:.2f}", None),
    ("indexing peak RSS, all processes MB", "index_tree_peak_mb", "{:.0f}", None),
]


def chat_table(measured: dict) -> list[str]:
    """Each target of the chat-sized tier: kenning, tantivy, their ratio and the target."""
    rows = []
    for tier in measured["result"]["tiers"]:
        k, t = tier["kenning"], tier["tantivy"]
        for label, key, fmt, most in CHAT_TARGETS:
            ratio = k[key] / t[key] if t.get(key) else None
            target = f"≤ {most:.1f}×" if most is not None else ""
            if key == "index_tree_peak_mb":
                target = "≤ 500 MB"
            rows.append([
                f"{tier['chunks_requested']:,} messages: {label}", fmt.format(k[key]), fmt.format(t[key]),
                f"{ratio:.2f}×" if ratio is not None else "", target,
            ])  # fmt: skip
        if "reindex_1pct_share" in k:
            share = f"{100 * k['reindex_1pct_share']:.1f}% of the build"
            rows.append([f"{tier['chunks_requested']:,} messages: 1% re-index", share, "", "", "≤ 5%"])
    return markdown_table(["measure", "kenning", "tantivy", "ratio", "target"], rows, align="lrrrl")


def small() -> dict:
    """benchmarks/bench_small.py on the three small sets, in its own process: warm lexical queries a
    second against tantivy's, and kenning's time per stage."""
    return run_tool([sys.executable, str(ROOT / "benchmarks" / "bench_small.py"), "--passes", "7", "--json"])


def small_table(measured: dict) -> list[str]:
    """Each small set: both systems' queries a second, their ratio against the target, and where
    kenning's time goes."""
    rows = []
    for r in measured["result"]:
        low, high = r["ratio_range"]
        stages = ", ".join(f"{stage} {ms * 1000:.0f}" for stage, ms in r["stages_ms"].items())
        ratio = f"{r['ratio']:.2f}× ({low:.2f}-{high:.2f})"
        rows.append([
            r["set"], f"{r['kenning_qps']:.0f}", f"{r['tantivy_qps']:.0f}", ratio, "≥ 0.5×",
            f"{stages}; outside the stages {r['outside_ms'] * 1000:.0f}",
        ])  # fmt: skip
    header = ["set", "kenning q/s", "tantivy q/s", "ratio (passes)", "target", "kenning µs a query, by stage"]
    return markdown_table(header, rows, align="lrrrll")


# the page's measured sections after quality: (the run's key, heading, what it measures, its table)
MEASURED_SECTIONS = [
    (
        "scale",
        "Scale: kenning against tantivy",
        [
            "A synthetic corpus drawn from the dev sets' statistics, 400 queries, each measurement in",
            "its own process; benchmarks/scale.py says what each figure is:",
        ],
        scale_table,
    ),
    (
        "chat",
        "Scale: chat-sized messages",
        [
            "Messages of 3 to 40 words in conversations (a title, a sender and a time each), queries of",
            "1 to 3 words, a quarter of them with a 30-day date range; kenning reads the logs as windows",
            "of 4 messages (stride 2), tantivy indexes each message with its fields stored:",
        ],
        chat_table,
    ),
    (
        "small",
        "Speed: warm lexical queries on the small sets",
        [
            "Every query of the set, top 10, in one process on one thread; kenning and tantivy take",
            "turns, a pass over the queries each, and each row is the median of their passes:",
        ],
        small_table,
    ),
]


def section(title: str, prose: list[str], command: str, table: list[str]) -> list[str]:
    """A measured section of the page: its heading, what it measures, the command, the table."""
    return [f"## {title}", "", *prose, f"`{command}`.", "", *table, ""]


def write_report(run: dict) -> str:
    lines = [
        "# Benchmarks",
        "",
        "Generated by `benchmarks/report.py`; do not edit by hand (run it again). History: git and",
        "CHANGELOG.md. The measurements themselves are in benchmarks.json beside this page.",
        "",
        f"- date: {run['date']}",
        f"- machine: {run['machine']}",
        f"- versions: {run['versions']}",
        f"- command: `{run['command']}`",
        f"- took: {run['seconds'] / 60:.0f} min",
        "",
        "## Quality: nDCG@10 on the dev sets",
        "",
        "Each set's best figure is bold. kenning runs with its defaults (hybrid is what `kenning search`",
        "does); every peer row is computed in the same run (benchmarks/quality.py says how). Queries go in",
        "as plain text, all judged queries of each set, scored by kenning.eval.ndcg_at.",
        "",
        *quality_table(run["quality"]),
        "",
        "The last row is the default's margin over its bar, max(kenning lexical, dense, their RRF) +",
        "0.01: the default earns its fusion only where it clears all three by that much.",
        "",
    ]
    if run.get("folds") is not None:
        lines += [
            "## Leave-one-set-out",
            "",
            "Do the fusion defaults carry over to a collection they were not fitted on? For each set,",
            "benchmarks/tune_hybrid.py's grid is fitted on the other five (the setting with the largest",
            "smallest margin over their bars) and scored on the one held out.",
            "",
            *folds_table(run["folds"]),
            "",
        ]
    for key, title, prose, table in MEASURED_SECTIONS:
        if run.get(key) is not None:
            lines += section(title, prose, run[key]["command"], table(run[key]))
    return "\n".join(lines)


def replace_readme_summary(run: dict) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        raise SystemExit(f"README.md has no {README_START} ... {README_END} block to rewrite")
    body = [README_START, f"Measured {run['date']} by `{run['command']}`. nDCG@10:", ""]
    body += summary_table(run["quality"])
    if run["scale"] is not None:
        body += ["", "Against tantivy on a synthetic corpus (benchmarks/scale.py):", ""]
        body += scale_table(run["scale"])
    body.append(README_END)
    head, rest = text.split(README_START, 1)
    tail = rest.split(README_END, 1)[1]
    readme.write_text(head + "\n".join(body) + tail)


def render(run: dict, out: Path) -> None:
    """The page and, when the run covers every set, the README's summary."""
    out.write_text(write_report(run))
    if set(run["quality"]) == set(SETS):
        replace_readme_summary(run)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_SETS)}")
    parser.add_argument("--scale", metavar="TIER", help="also benchmarks/scale.py on a tier: 10k, 100k, 1m")
    parser.add_argument("--chat", metavar="TIER", help="also the chat-sized tier of benchmarks/scale.py")
    parser.add_argument(
        "--render", action="store_true", help="measure nothing: write the pages again from benchmarks.json"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args()
    data = args.out.with_suffix(".json")
    if args.render:
        render(json.loads(data.read_text()), args.out)
        print(f"wrote {args.out} from {data}")
        return 0
    started = time.perf_counter()
    sets = QUICK_SETS if args.quick else SETS
    table = quality(sets)
    held_out = None if args.quick else folds([str(DATA / name) for name in sets])
    measured = scale(args.scale) if args.scale else None
    chat = scale(args.chat, chat=True) if args.chat else None
    speed = None if args.quick else small()
    run = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "versions": versions(),
        "command": " ".join(["python benchmarks/report.py", *sys.argv[1:]]),
        "seconds": time.perf_counter() - started,
        "quality": table,
        "folds": held_out,
        "scale": measured,
        "chat": chat,
        "small": speed,
    }
    if args.quick:  # a check, not the record: printed, nothing rewritten
        print(write_report(run))
        return 0
    data.write_text(json.dumps(run, indent=1) + "\n")
    render(run, args.out)
    print(f"wrote {data}, {args.out}" + (" and README.md's summary" if set(table) == set(SETS) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
