"""Signals are plugins: a signal defined and registered here, in the test file alone, takes part in
fusion, explain, the knob list, the CLI flags and kenning.toml, with no edit to kenning's core."""

import numpy as np
import pytest
from test_hybrid import FakeEmbedder, write

from kenning import FusionParams, Index, build_request, signals
from kenning.api.settings import search_keys
from kenning.search.fusion import fusion_knobs
from kenning.signals import Channel, Knob
from kenning.surfaces.cli import build_parser


class NewestFirst:
    """A toy signal: newer chunks (higher ids) score higher, scaled by its own knob."""

    name = "newest"
    weight = 0.0  # off unless asked for, like a real optional signal
    knobs = (Knob("newest_scale", 1.0, "how much newer counts"),)
    help = "newer chunks first (a test's toy)"

    def channel(self, ctx, query):
        ids = np.flatnonzero(query.allowed).astype(np.int64)
        scale = query.knobs["newest_scale"]
        scores = scale * ids / max(int(ids.max()), 1) if len(ids) else np.zeros(0)
        order = np.argsort(-scores, kind="stable")
        return Channel(
            self.name, ids[order], scores[order], lambda chunk_ids: scale * np.asarray(chunk_ids) / 100.0
        )

    def explain(self, ctx, query, chunk_id):
        return {"chunk_id": chunk_id, "note": "newer is better"}


@pytest.fixture
def toy():
    signals.register(NewestFirst())
    yield
    signals.unregister("newest")


@pytest.fixture
def index(tmp_path):
    for n, text in enumerate(["the car needs oil", "oil for the car engine", "a garden with no engine"]):
        write(tmp_path / "docs" / f"d{n}.md", f"# Doc {n}\n\n{text}\n")
    ix = Index(tmp_path / "ix")
    ix.add([tmp_path / "docs"])
    ix.register_embedder("fake", FakeEmbedder())
    ix.embed("fake")
    yield ix
    ix.close()


def test_a_registered_signal_is_fused_and_explained(toy, index):
    plain = index.search("car oil", mode="hybrid", embedder="fake", explain=True)
    assert all("newest" not in h.channels for h in plain.hits)  # weight 0: not run
    loud = index.search("car oil", mode="hybrid", embedder="fake", explain=True, w_newest=200.0)
    assert loud.hits[0].title == "Doc 2"  # the newest chunk wins when the toy's weight is high
    assert set(loud.hits[0].channels) >= {"lexical", "dense", "newest"}
    assert loud.hits[0].explain["newest"] == {"chunk_id": loud.hits[0].id, "note": "newer is better"}
    weights = loud.funnel.channels["fusion"]["weights"]
    assert weights["newest"]["weight"] == 200.0 and "newest" in loud.funnel.timings_ms


def test_its_knobs_are_everywhere_knobs_are(toy, tmp_path, monkeypatch):
    knobs = fusion_knobs()
    assert knobs["w_newest"][0] == 0.0 and knobs["newest_scale"] == (1.0, "how much newer counts")
    assert FusionParams(w_newest=2.0, newest_scale=3.0).to_dict()["newest_scale"] == 3.0
    request = build_request("q", w_newest=2.0, newest_scale=0.5)
    assert request.fusion.weight("newest") == 2.0 and request.fusion.knob("newest_scale") == 0.5
    flags = build_parser().parse_args(["search", "q", "--w-newest", "2", "--newest-scale", "4"])
    assert flags.w_newest == 2.0 and flags.newest_scale == 4.0
    assert {"w_newest", "newest_scale"} <= set(search_keys())  # kenning.toml [search] and KENNING_*
    help_text = " ".join(build_parser()._subparsers._group_actions[0].choices["search"].format_help().split())
    assert "--w-newest" in help_text and "newer chunks first" in help_text


def test_unknown_knobs_are_refused_by_name():
    with pytest.raises(ValueError, match="w_nothing"):
        FusionParams(w_nothing=1.0)
    with pytest.raises(ValueError, match="unknown search setting"):
        build_request("q", shoe_size=44)
