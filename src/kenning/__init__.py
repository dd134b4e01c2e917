"""kenning: local-first hybrid search that shows why it ranked each result."""

import os

# kenning's matrix work is small (one query vector against the chunk vectors). Multi-threaded BLAS
# only adds overhead there, and on 2 cores its threads fight onnxruntime's: a 1400 x 384 product took
# 1.1 ms instead of 0.06 ms right after an embedding call. A user's own setting is kept.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from kenning import signals  # noqa: E402
from kenning.api import (  # noqa: E402
    Funnel,
    Hit,
    Index,
    IndexReport,
    IndexWriter,
    SearchRequest,
    SearchResponse,
    build_request,
)
from kenning.search.fusion import FusionParams  # noqa: E402
from kenning.signals.lexical import Bm25Params  # noqa: E402

__version__ = "0.1.0"
__all__ = [
    "Bm25Params",
    "Funnel",
    "FusionParams",
    "Hit",
    "Index",
    "IndexReport",
    "IndexWriter",
    "SearchRequest",
    "SearchResponse",
    "__version__",
    "build_request",
    "signals",
]
