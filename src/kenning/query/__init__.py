"""From text to a plan: the query dialect (parser), scope filters (filters), the plan of clauses and
terms with stopwords, k3 counts and glossary aliases (plan), and spelling (spelling)."""

from kenning.query.filters import Filters
from kenning.query.parser import ParsedQuery, Phrase, Word, parse_query

__all__ = ["Filters", "ParsedQuery", "Phrase", "Word", "parse_query"]
