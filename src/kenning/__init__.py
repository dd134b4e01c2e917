"""kenning: local-first hybrid search that shows why it ranked each result."""

from kenning.index import Index, IndexReport
from kenning.search import Funnel, Hit, SearchResponse
from kenning.signals.lexical import Bm25Params

__version__ = "0.1.0"
__all__ = ["Index", "IndexReport", "Bm25Params", "SearchResponse", "Hit", "Funnel", "__version__"]
