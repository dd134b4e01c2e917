"""Text analysis, the same at index and query time: tokens, folding, stemming, identifier parts
(analyzer), query-side stopwords (stopwords), and which terms must never be treated as ordinary words
(protected: acronyms, identifiers, proper nouns)."""

from kenning.analysis.analyzer import TOKEN_RE, Analyzer, AnalyzerConfig, fold

__all__ = ["TOKEN_RE", "Analyzer", "AnalyzerConfig", "fold"]
