"""`kenning graph ENTITY`: an entity's neighbours in the entity graph, with the counts behind each edge.

a: chunks holding the entity, b: chunks holding the neighbour, k: chunks holding both, z: how far k
stands above what independence predicts, weight: the edge weight the search uses (docs/scoring.md).
"""

from __future__ import annotations

import json

from kenning.entities.graph import SCORINGS
from kenning.surfaces.terminal import terminal_safe


def add_graph_parser(subparsers, add_common) -> None:
    p = subparsers.add_parser("graph", help="an entity's neighbours in the entity graph (a, b, k, z, weight)")
    p.add_argument("entity", help='an entity as written, e.g. "Van Helsing" (case and accents do not matter)')
    p.add_argument("--limit", type=int, default=20, help="neighbours to list (default 20)")
    p.add_argument(
        "--scoring", choices=SCORINGS, default="relatedness", help="edge weight (default relatedness)"
    )
    add_common(p)


def cmd_graph(args, open_index) -> int:
    if args.limit < 1:
        raise ValueError("--limit must be 1 or more")
    with open_index(args) as index:
        result = index.entity_neighbours(args.entity, args.limit, args.scoring)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    surface = terminal_safe(result["surface"])
    print(f"{surface} ({result['kind']}): in {result['chunks']} of {result['n']} chunks")
    if result["also_written"]:
        print(f"  also written: {terminal_safe(', '.join(result['also_written']))}")
    if not result["neighbours"]:
        print("  no neighbour occurs with it more often than chance")
    print(f"  {'neighbour':<32} {'a':>6} {'b':>6} {'k':>6} {'z':>8} {'weight':>7}")
    for e in result["neighbours"]:
        counts = f"{e['a']:>6} {e['b']:>6} {e['k']:>6}"
        print(f"  {terminal_safe(e['surface'])[:32]:<32} {counts} {e['z']:>8.2f} {e['weight']:>7.3f}")
    return 0
