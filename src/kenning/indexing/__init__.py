"""The write path: IndexWriter (walk, ingest, analyse, segment, embed, commit) and the immutable
postings segments with their merge policy (segments).

The writer is imported when first asked for, not with the package: an analysis worker process
imports only kenning.indexing.analysis, and with the writer (the parsers, Markdown, DOCX) it took
175 ms to import instead of ~110."""

__all__ = ["EmbedReport", "IndexReport", "IndexWriter"]


def __getattr__(name: str):
    if name in __all__:
        from kenning.indexing import writer

        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
