"""Query-side stopwords: function and question words that carry no topic.

They are dropped from queries only (the index keeps every word, so phrases and exact lookups still
work). The list is kenning's own: articles, pronouns, auxiliaries, prepositions, conjunctions and the
question words people type in natural-language queries.
"""

ENGLISH_QUERY_STOPWORDS = frozenset(
    """
    a an the this that these those such
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    am is are was were be been being have has had having do does did doing done
    will would shall should can could may might must ought
    and or but nor so yet if then else than too very also just only
    of at by for with about against between into through during before after above below
    to from up down in out on off over under again further once
    here there when where why how what which who whom whose whether
    all any both each few more most other some no not own same
    as until while because though although unless since upon onto per via
    s t d ll m o re ve y
    """.split()
)
