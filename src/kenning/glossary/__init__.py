"""The curated glossary: alias groups with a lifecycle, stored in the index, that expand query words.

- terms: what the parts agree on (statuses, how a term is keyed, the error);
- expansion: what a search reads, the approved other names of a word;
- curation: a person's edits (add, approve, reject, merge, split) and the views they work from;
- exchange: import and export as JSON or CSV;
- suggest and miners: the optional part that mines candidates from the indexed text into the
  pending queue;
- glossary: the `Glossary` object that puts them together for the index and the surfaces.

The names below load on first use, so that a search importing kenning.glossary.expansion does not
also load curation, import/export and the store behind them.
"""

__all__ = ["Alternative", "Glossary", "GlossaryError"]


def __getattr__(name: str):
    if name in __all__:
        from kenning.glossary import glossary

        return getattr(glossary, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
