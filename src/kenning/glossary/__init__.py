"""The curated glossary: alias groups with a lifecycle, stored in the index (glossary), and the miners
that propose candidates for a person to approve (miners). The search plan reads approved groups to
expand query words."""

from kenning.glossary.glossary import Alternative, Glossary, GlossaryError

__all__ = ["Alternative", "Glossary", "GlossaryError"]
