"""Suggestion: run the miners over the index and queue what they find as pending members.

What a miner proposes (kenning.glossary.miners) is only a candidate: this module decides which
candidates are new to the glossary and files them where a person will look, as a pending alias of an
existing group or as a proposed group of its own. A person then approves or rejects them
(kenning.glossary.curation). Nothing in search or indexing imports this module.
"""

from __future__ import annotations

from collections.abc import Callable

from kenning.glossary.curation import GlossaryCuration
from kenning.glossary.miners import Corpus, Suggestion, mine
from kenning.glossary.terms import APPROVED

Judge = Callable[[dict], "bool | None"]


def suggest(
    curation: GlossaryCuration,
    limit: int = 50,
    judge: Judge | None = None,
    scope: str = "",
    miners: list[str] | None = None,
    mined: list | None = None,
) -> list[dict]:
    """Mine candidate pairs from the indexed text and queue the new ones as pending.

    Skips pairs a person rejected (in any group, any scope), pairs already grouped together, and
    pairs whose terms are approved in two different groups (merging is a person's call). A term
    already approved in a group of `scope` (or global) gets the other one as a pending member of
    that group; otherwise the pair becomes a proposed group. `scope` also limits mining to that
    collection's documents.

    `judge` is the hook for a later re-judge step (an LLM, a rule, a person at a prompt): it gets
    each candidate as a dict (canonical, term, kind, score, evidence) before it is stored and
    returns False to drop it, True to keep it, or None to abstain (kept). Its verdict is
    recorded in the evidence. The default is no judge.

    Returns what was added, best first, at most `limit` entries. `mined`, when given, receives how
    much of the index the miners read (kenning.glossary.miners.MinedShare: a large index is
    mined in a spread of whole documents, MINE_CHUNKS chunks at most).
    """
    if limit <= 0:
        return []
    scope = (scope or "").strip()
    suggestions, corpus = mine(curation.store, curation.analyzer, miners=miners, collection=scope or None)
    if mined is not None:
        mined.append(corpus.share)
    added: list[dict] = []
    with curation.writing():
        for s in suggestions:
            if len(added) >= limit:
                break
            entry = _propose(curation, s, scope, corpus, judge)
            if entry is not None:
                added.append(entry)
    return added


def _propose(
    curation: GlossaryCuration, s: Suggestion, scope: str, corpus: Corpus, judge: Judge | None
) -> dict | None:
    ckey, akey = curation.key(s.canonical), curation.key(s.alias)
    if not ckey or not akey or ckey == akey:
        return None
    groups = {g.id: g for g in curation.store.glossary_groups()}
    rows = [
        (t.group_id, t.key, t.status, groups[t.group_id].scope)
        for t in curation.store.glossary_terms()
        if t.key in (ckey, akey) and t.group_id in groups
    ]
    by_group: dict[int, dict[str, str]] = {}
    for gid, key, status, _gscope in rows:
        by_group.setdefault(gid, {})[key] = status
    for members in by_group.values():
        if len(members) == 2:
            return None  # grouped together already, or one of them was rejected from the other's group
    in_scope = {gid for gid, _k, _s, gscope in rows if gscope in ("", scope)}
    approved = {
        key: sorted(
            gid for gid, members in by_group.items() if members.get(key) in APPROVED and gid in in_scope
        )
        for key in (ckey, akey)
    }
    if approved[ckey] and approved[akey]:
        return None  # both approved elsewhere: a merge, for a person to decide
    evidence = s.evidence()
    candidate = {
        "canonical": s.canonical,
        "term": s.alias,
        "kind": s.kind,
        "score": s.score,
        "evidence": evidence,
    }
    if judge is not None:
        verdict = judge(dict(candidate))
        if verdict is False:
            return None
        evidence["judge"] = "accepted" if verdict else "abstained"
    if approved[ckey]:
        gid, pending_surface = approved[ckey][0], s.alias
    elif approved[akey]:
        gid, pending_surface = approved[akey][0], s.canonical
    else:
        proposals = sorted(
            t.group_id
            for t in curation.members_where(key=ckey, status="canonical")
            if groups[t.group_id].scope == scope and groups[t.group_id].origin == "suggest"
        )
        if proposals:
            gid = proposals[0]
        else:
            gid = curation.insert_group(scope, "suggest")
            curation.insert_term(
                gid, s.canonical, "canonical", corpus.phrase_protection(s.canonical), "suggest"
            )
        pending_surface = s.alias
    term_id = curation.insert_term(
        gid, pending_surface, "pending", corpus.phrase_protection(pending_surface), "suggest", evidence
    )
    return {
        "id": term_id,
        "group": gid,
        "canonical": curation.canonical_of(gid).surface,
        "term": pending_surface,
        "kind": s.kind,
        "score": round(s.score, 3),
        "evidence": evidence,
    }
