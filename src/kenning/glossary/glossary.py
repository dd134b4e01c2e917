"""The glossary as one object: alias groups that let a query word also match the other names of its
concept, for the index and the surfaces that expose it.

A `Glossary` is the curation of one index's groups (kenning.glossary.curation) together with the
other parts, each in its own module:

- expansion (kenning.glossary.expansion): the approved other names of a query word, for searches;
- import and export (kenning.glossary.exchange): the groups as a JSON or CSV file;
- suggestion (kenning.glossary.suggest): the optional miners' candidates, queued as pending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kenning.glossary.curation import GlossaryCuration
from kenning.glossary.exchange import export_glossary, import_glossary
from kenning.glossary.expansion import Alternative, GlossaryExpansion, GlossaryPhrases
from kenning.glossary.terms import GlossaryError

if TYPE_CHECKING:
    from kenning.analysis.analyzer import Analyzer
    from kenning.store.protocols import Store

__all__ = ["Alternative", "Glossary", "GlossaryError"]


class Glossary(GlossaryCuration):
    """The alias groups stored in one index: curated here, expanded, exported and imported, suggested."""

    def __init__(self, store: Store, analyzer: Analyzer) -> None:
        super().__init__(store, analyzer)
        self.expansion = GlossaryExpansion(store, analyzer)

    def is_empty(self) -> bool:
        """No approved group at all: searches can skip glossary lookups entirely."""
        return self.expansion.is_empty()

    def expansions(self, word: str, scopes: list[str] | None = None) -> list[Alternative]:
        """The approved other members of the group(s) holding `word` (see GlossaryExpansion)."""
        return self.expansion.expansions(word, scopes)

    def phrases(self, scopes: list[str] | None = None) -> GlossaryPhrases | None:
        """The terms of several words a query may type without quotes (see GlossaryExpansion)."""
        return self.expansion.phrases(scopes)

    def export(self, fmt: str = "json") -> str:
        """Every group (proposals included) as JSON or CSV; `import_` reads it back."""
        return export_glossary(self, fmt)

    def import_(self, text: str, fmt: str = "json") -> dict:
        """Read groups from JSON or CSV in one atomic commit (see import_glossary); returns counts."""
        return import_glossary(self, text, fmt)

    def suggest(self, limit: int = 50, **options) -> list[dict]:
        """Mine candidate pairs and queue the new ones as pending; `options` are judge, scope, miners
        and mined (see kenning.glossary.suggest.suggest). The miners load only here: searching and
        indexing never import them."""
        from kenning.glossary.suggest import suggest

        return suggest(self, limit, **options)
