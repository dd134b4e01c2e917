"""The write path: IndexWriter (walk, ingest, analyse, segment, embed, commit) and the immutable
postings segments with their merge policy (segments)."""

from kenning.indexing.writer import EmbedReport, IndexReport, IndexWriter

__all__ = ["EmbedReport", "IndexReport", "IndexWriter"]
