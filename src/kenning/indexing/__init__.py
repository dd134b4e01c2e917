"""The write path: files in, vectors in, each commit atomic.

- writer: IndexWriter, the coordinator (add, remove_collection, embed), reading top to bottom.
- files: which files an add indexes and what each changes (unchanged, re-read, parsed, vanished).
- chunk_run: one write's chunk changes in its transaction: analysis, segments landed, merges.
- analysis (and analysis_worker): chunks into segments, inline or in worker processes.
- segments, spill, term_table: the immutable postings segments, their merge policy, the spill files
  a run's segments wait in until its end.
- embed_run: vectors for the chunks without one, committed in blocks.
- sidefile_sync: the ANN graph and lengths file brought up to date after a commit.
- tuning: WriterTuning, the sizes that bound a write's memory; allocator: freed memory given back
  to the OS; reports: what a write reports.

The writer is imported when first asked for, not with the package: an analysis worker process
imports only kenning.indexing.analysis, and with the writer (the parsers, Markdown, DOCX) it took
175 ms to import instead of ~110."""

__all__ = ["EmbedReport", "IndexReport", "IndexWriter", "WriterTuning"]


def __getattr__(name: str):
    if name in __all__:
        from kenning.indexing import writer

        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
