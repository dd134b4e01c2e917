"""Curation: a person's edits to the alias groups, and the views they curate from.

A group is one canonical term plus aliases (`auth` -> `authentication`, `sign-in`, `login`), scoped to
one collection or global (scope ""). It lives in the index database, next to what it describes, so
it travels with the index and every change is one atomic commit.

Each member of a group has a status:

- `canonical`: the group's name; exactly one per group.
- `alias`: an approved other name. Canonical and aliases are what query expansion uses.
- `pending`: proposed (by kenning.glossary.suggest, or imported as pending) and waiting for a person.
- `rejected`: a person said no. The row stays in the group as the record of that decision, so
  the miners' pair is never proposed again, even after the group is merged into another.

Every member records whether it is protected (acronym, identifier, proper noun: see
kenning.analysis.protected); a person may still add a protected term, and it keeps the flag.

Groups are named by id or by canonical term. Bad input raises `GlossaryError` with a message that
says what to do. The row-level operations at the top (members_where, insert_term, set_status, ...)
are what import (kenning.glossary.exchange) and suggestion (kenning.glossary.suggest) build on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from kenning.analysis.analyzer import TOKEN_RE
from kenning.analysis.protected import CaseStats, iter_words, protected_reason
from kenning.glossary.terms import APPROVED, STATUSES, STRENGTH, GlossaryError, term_key
from kenning.store.errors import decoding
from kenning.store.records import GlossaryTermRow, own_text


class GlossaryCuration:
    """The alias groups stored in one index, as a person edits them."""

    def __init__(self, store, analyzer):
        self.store = store
        self.analyzer = analyzer

    # ------------------------------------------------------------------------ row-level operations
    def key(self, text: str) -> str:
        """The term key of `text` (kenning.glossary.terms.term_key)."""
        return term_key(self.analyzer, text)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """A consistent read (joining the caller's transaction if one is open)."""
        with self.store.reading():
            yield

    @contextmanager
    def writing(self) -> Iterator[None]:
        """One atomic commit, or part of the caller's."""
        if self.store.in_transaction:
            yield
            return
        with self.store.transaction():
            yield

    def members_where(self, **match) -> list[GlossaryTermRow]:
        """Members whose fields equal `match` (e.g. key=..., group_id=...), by id."""
        return [t for t in self.store.glossary_terms() if all(getattr(t, k) == v for k, v in match.items())]

    def group_scopes(self) -> dict[int, str]:
        """Each group's scope, by group id ("" is global)."""
        return {g.id: g.scope for g in self.store.glossary_groups()}

    def canonical_of(self, group_id: int) -> GlossaryTermRow:
        """The group's canonical member (a group without one is damaged)."""
        rows = self.members_where(group_id=group_id, status="canonical")
        if not rows:
            raise GlossaryError(f"glossary group {group_id} has no canonical term (damaged glossary)")
        return rows[0]

    def _group_row(self, group_id: int):
        return next((g for g in self.store.glossary_groups() if g.id == group_id), None)

    def _describe(self, group_id: int) -> str:
        row = self._group_row(group_id)
        scope = f", scope {row.scope!r}" if row and row.scope else ""
        return f"group {group_id} ({self.canonical_of(group_id).surface!r}{scope})"

    def _resolve_group(self, ref: int | str) -> int:
        """A group by id (int or digits) or by canonical term."""
        text = str(ref).strip()
        if isinstance(ref, int) or text.isdigit():
            if self._group_row(int(text)) is None:
                raise GlossaryError(f"no glossary group with id {text} (see `kenning glossary ls`)")
            return int(text)
        key = self.key(text)
        ids = sorted({t.group_id for t in self.members_where(key=key, status="canonical")})
        if not ids:
            raise GlossaryError(f"no glossary group named {text!r} (see `kenning glossary ls`)")
        if len(ids) > 1:
            raise GlossaryError(
                f"{text!r} names {len(ids)} groups ({', '.join(self._describe(i) for i in ids)}); give the id"
            )
        return ids[0]

    def insert_group(self, scope: str, origin: str) -> int:
        """A new empty group; `origin` says who made it: "manual", "import" or "suggest"."""
        return self.store.add_glossary_group(scope, origin)

    def insert_term(
        self,
        group_id: int,
        surface: str,
        status: str,
        protected: str | None,
        origin: str,
        evidence: dict | None = None,
    ) -> int:
        """A new member, stored with its term key and its evidence as JSON; returns its id."""
        return self.store.add_glossary_term(
            group_id,
            surface,
            self.key(surface),
            status,
            protected,
            origin,
            json.dumps(evidence, ensure_ascii=False) if evidence else None,
        )

    def set_status(self, term_id: int, status: str) -> None:
        """Change one member's status (the caller has checked the change is allowed)."""
        self.store.update_glossary_term(term_id, status)

    def _clean(self, text: str, what: str) -> str:
        text = " ".join(str(text).split())
        if not text or not self.key(text):
            raise GlossaryError(f"{what} {text!r} has no searchable words")
        return text

    def protection(self, surfaces: list[str]) -> dict[str, str | None]:
        """Why each term is protected, if it is: its shape, else how the indexed text writes it (read
        from the chunks that hold its words, at most 400 of them)."""
        out: dict[str, str | None] = {}
        need: list[str] = []
        for s in surfaces:
            words = [w for w, *_ in iter_words(s)]
            reason = protected_reason(s) if len(words) <= 1 else None
            out[s] = reason
            if reason is None and words:
                need.append(s)
        if not need:
            return out
        stats = _case_stats_for(self.store, self.analyzer, need)
        for s in need:
            out[s] = stats.phrase_reason(s)
        return out

    # ------------------------------------------------------------------------------------ listing
    def _group_dict(self, gid: int, scope: str, origin: str, terms: list[GlossaryTermRow]) -> dict:
        canonical = next((t.surface for t in terms if t.status == "canonical"), "")
        members = []
        for t in sorted(terms, key=lambda t: (STATUSES.index(t.status), t.id)):
            member = {"term": t.surface, "status": t.status, "protected": t.protected}
            if t.evidence:
                member["evidence"] = stored_evidence(t)
            members.append(member)
        return {"id": gid, "scope": scope, "canonical": canonical, "origin": origin, "members": members}

    def groups(self, scope: str | None = None, include_proposed: bool = False) -> list[dict]:
        """Groups with their members, by id. `scope` keeps one scope ("" = global only).

        Groups that `suggest` created and nobody has approved anything in yet are proposals, shown by
        `pending`; `include_proposed` lists them here too.
        """
        with self._reading():
            groups = [g for g in self.store.glossary_groups() if scope is None or g.scope == scope]
            by_group: dict[int, list[GlossaryTermRow]] = {}
            for t in self.store.glossary_terms():
                by_group.setdefault(t.group_id, []).append(t)
        out = []
        for gid, gscope, origin in ((g.id, g.scope, g.origin) for g in groups):
            terms = by_group.get(gid, [])
            if not include_proposed and origin == "suggest" and not any(t.status == "alias" for t in terms):
                continue
            out.append(self._group_dict(gid, gscope, origin, terms))
        return out

    def pending(self) -> list[dict]:
        """Pending terms, oldest first, each with its group and the evidence that suggested it."""
        with self._reading():
            scopes = self.group_scopes()
            terms = self.store.glossary_terms()
        canonicals = {t.group_id: t.surface for t in terms if t.status == "canonical"}
        aliases: dict[int, int] = {}
        for t in terms:
            if t.status == "alias":
                aliases[t.group_id] = aliases.get(t.group_id, 0) + 1
        out = []
        for t in terms:
            if t.status != "pending" or t.group_id not in scopes or t.group_id not in canonicals:
                continue
            scope, canonical = scopes[t.group_id], canonicals[t.group_id]
            n_aliases = aliases.get(t.group_id, 0)
            out.append(
                {
                    "id": t.id,
                    "term": t.surface,
                    "group": t.group_id,
                    "canonical": canonical,
                    "scope": scope,
                    "protected": t.protected,
                    "new_group": n_aliases == 0,
                    "evidence": stored_evidence(t) if t.evidence else None,
                }
            )
        return out

    # ------------------------------------------------------------------------------------ writing
    def add(self, canonical: str, aliases: list[str], scope: str = "") -> int:
        """Add a group, or extend the group whose canonical (else an approved member) is `canonical`.

        A person's word wins: a pending or rejected alias becomes approved. Returns the group id.
        """
        canonical = self._clean(canonical, "canonical term")
        aliases = [self._clean(a, "alias") for a in aliases]
        scope = (scope or "").strip()
        ckey = self.key(canonical)
        for alias in aliases:
            if self.key(alias) == ckey:
                raise GlossaryError(f"alias {alias!r} is the same term as {canonical!r} after normalisation")
        flags = self.protection([canonical, *aliases])
        with self.writing():
            gid = self._find_group(ckey, scope)
            if gid is None:
                gid = self.insert_group(scope, "manual")
                self.insert_term(gid, canonical, "canonical", flags[canonical], "manual")
            existing = {t.key: t for t in self.members_where(group_id=gid)}
            for alias in aliases:
                key = self.key(alias)
                t = existing.get(key)
                if t is None:
                    term_id = self.insert_term(gid, alias, "alias", flags[alias], "manual")
                    existing[key] = GlossaryTermRow(
                        term_id, gid, alias, key, "alias", flags[alias], "manual", None
                    )
                elif t.status in ("pending", "rejected"):
                    self.set_status(t.id, "alias")
        return gid

    def _find_group(self, key: str, scope: str) -> int | None:
        """The group in `scope` whose canonical is `key`, else one where `key` is an approved alias."""
        scopes = self.group_scopes()
        rows = [
            t for t in self.members_where(key=key) if t.status in APPROVED and scopes.get(t.group_id) == scope
        ]
        rows.sort(key=lambda t: (t.status != "canonical", t.group_id))
        return rows[0].group_id if rows else None

    def _pick(
        self, term: str, group: int | str | None, statuses: tuple[str, ...]
    ) -> tuple[GlossaryTermRow | None, list[GlossaryTermRow]]:
        """The one member called `term` with one of `statuses` (in `group` if given), or None when the
        term is in the glossary but not in those statuses; with every member called `term` there, by
        id, for the caller to say why. Unknown or ambiguous terms raise."""
        key = self.key(term)
        gid = self._resolve_group(group) if group is not None else None
        rows = self.members_where(key=key, group_id=gid) if gid is not None else self.members_where(key=key)
        if not rows:
            where = f" in {self._describe(gid)}" if gid is not None else ""
            raise GlossaryError(
                f"{term!r} is not in the glossary{where} (see `kenning glossary ls` / `pending`)"
            )
        hits = [t for t in rows if t.status in statuses]
        if len(hits) > 1:
            raise GlossaryError(
                f"{term!r} is {hits[0].status} in {len(hits)} groups "
                f"({', '.join(self._describe(t.group_id) for t in hits)}); choose one with --group"
            )
        return (hits[0] if hits else None), rows

    def approve(self, term: str, group: int | str | None = None) -> None:
        """Make a pending term an alias of its group. Approving a rejected term is refused."""
        with self.writing():
            hit, rows = self._pick(term, group, ("pending",))
            if hit is not None:
                self.set_status(hit.id, "alias")
                return
            if any(t.status in APPROVED for t in rows):
                return  # already approved: nothing to do
            rejected = rows[0]
            raise GlossaryError(
                f"{term!r} was rejected from {self._describe(rejected.group_id)}; a rejected pair is not "
                f"approved again. If it does belong there, add it by hand: "
                f"kenning glossary add {self.canonical_of(rejected.group_id).surface!r} {term!r}"
            )

    def reject(self, term: str, group: int | str | None = None) -> None:
        """Reject a pending term (or withdraw an approved alias). The pair is never proposed again."""
        with self.writing():
            hit, rows = self._pick(term, group, ("pending", "alias"))
            if hit is not None:
                self.set_status(hit.id, "rejected")
                return
            canonical = [t for t in rows if t.status == "canonical"]
            if canonical and not any(t.status == "rejected" for t in rows):
                raise GlossaryError(
                    f"{term!r} is the canonical term of {self._describe(canonical[0].group_id)}; "
                    "reject its aliases, or split it off with `kenning glossary split`"
                )

    def merge(self, source_group: int | str, target_group: int | str) -> None:
        """Move every member of `source_group` into `target_group` and delete the source group.

        The source's canonical becomes an alias. Where both hold a term, the stronger status wins
        (canonical, alias, rejected, pending in that order). Both groups must have the same scope.
        """
        with self.writing():
            src, dst = self._resolve_group(source_group), self._resolve_group(target_group)
            if src == dst:
                raise GlossaryError(f"cannot merge {self._describe(src)} into itself")
            src_scope, dst_scope = self._group_row(src).scope, self._group_row(dst).scope
            if src_scope != dst_scope:
                raise GlossaryError(
                    f"{self._describe(src)} and {self._describe(dst)} have different scopes "
                    f"({src_scope or 'global'} / {dst_scope or 'global'}); only groups of one scope merge"
                )
            existing = {t.key: t for t in self.members_where(group_id=dst)}
            for t in self.members_where(group_id=src):
                status = "alias" if t.status == "canonical" else t.status
                have = existing.get(t.key)
                if have is None:
                    self.store.update_glossary_term(t.id, status, group_id=dst)
                    continue
                if STRENGTH[status] > STRENGTH[have.status]:
                    self.set_status(have.id, status)
                self.store.delete_glossary_term(t.id)
            if self._group_row(dst).origin == "suggest":
                self.store.set_glossary_group_origin(dst, "manual")
            self.store.delete_glossary_group(src)

    def split(self, term: str, group: int | str | None = None) -> int:
        """Take a term out of its group into a new group of its own (where it is canonical).

        It stays in the old group as `rejected`, so the pair is not proposed again. Splitting the
        canonical term hands the old group to its oldest alias. Returns the new group's id.
        """
        with self.writing():
            hit, _rows = self._pick(term, group, ("alias", "pending", "canonical"))
            if hit is None:
                raise GlossaryError(f"{term!r} is only a rejected term; there is nothing to split")
            old = hit.group_id
            scope = self._group_row(old).scope
            if hit.status == "canonical":
                heirs = self.members_where(group_id=old, status="alias")
                if not heirs:
                    raise GlossaryError(
                        f"{term!r} is the canonical term of {self._describe(old)}, which has no alias to "
                        "take its place; nothing to split"
                    )
                self.set_status(heirs[0].id, "canonical")
            self.set_status(hit.id, "rejected")
            new = self.insert_group(scope, "manual")
            self.insert_term(new, hit.surface, "canonical", hit.protected, "manual")
            return new


def _case_stats_for(store, analyzer, phrases: list[str], max_chunks: int = 400) -> CaseStats:
    """Case statistics from the live chunks that hold the phrases' words (a bounded sample)."""
    terms = sorted({analyzer.token_terms(raw)[0] for p in phrases for raw in TOKEN_RE.findall(p)})
    stats = CaseStats()
    if not terms:
        return stats
    with store.reading():
        snapshot = store.read_snapshot()
        ids: set[int] = set()
        for seg in snapshot.segment_ids:
            for posting in store.load_postings(seg, terms).values():
                ids.update(int(i) for i in posting[0][:max_chunks] if int(i) in snapshot.live)
            if len(ids) >= max_chunks:
                break
        rows = store.chunks_by_ids(sorted(ids)[:max_chunks])
    for row in rows.values():
        for word, _s, _e, mid in iter_words(own_text(row.title, row.body)):
            stats.add(word, mid)
    return stats


def stored_evidence(term: GlossaryTermRow):
    """A term's stored evidence (JSON the miner wrote); a row that is not, or is nested past Python's
    stack, is a damaged index (IndexDamaged names it), not a traceback. `kenning verify` reports such
    a row and `kenning repair` keeps the term without it."""
    with decoding(f"glossary term {term.id}'s evidence"):
        return json.loads(term.evidence)
