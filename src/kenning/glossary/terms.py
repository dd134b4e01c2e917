"""What every part of the glossary agrees on: a member's statuses, how a term is keyed, the error.

A term is matched by its analysed form, its key: the analyzer's whole-token terms joined by spaces,
without a leading article. So `Auth`, `auth` and, with stemming, `auths` are one term, and "the
Board" is found from the query word `board`.
"""

from __future__ import annotations

import unicodedata

from kenning.analysis.analyzer import TOKEN_RE

STATUSES = ("canonical", "alias", "pending", "rejected")
APPROVED = ("canonical", "alias")
# Where two records of one term meet (a merge, an import), the stronger status is kept: a person's
# approval outranks a rejection, which outranks a proposal.
STRENGTH = {"canonical": 3, "alias": 2, "rejected": 1, "pending": 0}
_ARTICLES = frozenset(["the", "a", "an"])


class GlossaryError(ValueError):
    """Bad glossary input: an unknown term or group, a forbidden status change, a bad import file."""


def term_key(analyzer, text: str) -> str:
    """The analysed form of a term: each token's whole index term, joined by spaces, without a leading
    article ("The Board" -> "board"; "Sign-in" -> "sign in")."""
    tokens = [analyzer.token_terms(raw)[0] for raw in TOKEN_RE.findall(unicodedata.normalize("NFC", text))]
    while len(tokens) > 1 and tokens[0] in _ARTICLES:
        tokens.pop(0)
    return " ".join(tokens)
