"""The glossary: alias groups that let a query word also match the other names of its concept.

A group is one canonical term plus aliases (`auth` -> `authentication`, `sign-in`, `login`), scoped to
one collection or global (scope ""). It lives in the index database, next to what it describes, so
it travels with the index and every change is one atomic commit.

Each member of a group has a status:

- `canonical`: the group's name; exactly one per group.
- `alias`: an approved other name. Canonical and aliases are what query expansion uses.
- `pending`: proposed (by `suggest`, or imported as pending) and waiting for a person.
- `rejected`: a person said no. The row stays in the group as the record of that decision, so
  `suggest` never proposes the pair again, even after the group is merged into another.

Terms are matched by their analysed form (the analyzer's whole-token terms joined by spaces), so `Auth`,
`auth` and, with stemming, `auths` are one term; a leading article is not part of it, so "the
Professor" is found from the query word `professor`. Every member records whether it is protected
(acronym, identifier, proper noun: see kenning.analysis.protected); a person may still add a protected term,
and it keeps the flag.

Groups are named by id or by canonical term. Bad input raises `GlossaryError` with a message that
says what to do.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kenning.analysis.analyzer import TOKEN_RE
from kenning.analysis.protected import CaseStats, iter_words, protected_reason
from kenning.store import GlossaryTermRow

STATUSES = ("canonical", "alias", "pending", "rejected")
APPROVED = ("canonical", "alias")
_ARTICLES = frozenset(["the", "a", "an"])
EXPORT_VERSION = 1
CSV_FIELDS = ["scope", "group", "term", "status", "protected", "evidence"]


Judge = Callable[[dict], "bool | None"]


class GlossaryError(ValueError):
    """Bad glossary input: an unknown term or group, a forbidden status change, a bad import file."""


@dataclass
class Alternative:
    """One way a query word may be matched after expansion."""

    surface: str  # the alias text as written, e.g. "sign-in" or "JSON Web Token"
    group_id: int
    canonical: str
    status: str  # "canonical" or "alias"


_Term = GlossaryTermRow


def term_key(analyzer, text: str) -> str:
    """The analysed form of a term: each token's whole index term, joined by spaces, without a leading
    article ("The Professor" -> "professor"; "Sign-in" -> "sign in")."""
    tokens = [analyzer.token_terms(raw)[0] for raw in TOKEN_RE.findall(unicodedata.normalize("NFC", text))]
    while len(tokens) > 1 and tokens[0] in _ARTICLES:
        tokens.pop(0)
    return " ".join(tokens)


class Glossary:
    """The alias groups stored in one index."""

    def __init__(self, store, analyzer):
        self.store = store
        self.analyzer = analyzer
        self._lookup: dict[str, list[tuple[int, str]]] | None = None
        self._members: dict[int, list[tuple[str, str, str]]] = {}
        self._canonical: dict[int, str] = {}
        self._lookup_generation: int | None = None

    # ------------------------------------------------------------------------------------ plumbing
    def key(self, text: str) -> str:
        return term_key(self.analyzer, text)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """A consistent read (joining the caller's transaction if one is open)."""
        with self.store.reading():
            yield

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One atomic commit, or part of the caller's."""
        if self.store.in_transaction:
            yield
            return
        with self.store.transaction():
            yield

    def _terms(self, **match) -> list[_Term]:
        """Members whose fields equal `match` (e.g. key=..., group_id=...), by id."""
        return [t for t in self.store.glossary_terms() if all(getattr(t, k) == v for k, v in match.items())]

    def _scopes(self) -> dict[int, str]:
        return {g.id: g.scope for g in self.store.glossary_groups()}

    def _canonical_of(self, group_id: int) -> _Term:
        rows = self._terms(group_id=group_id, status="canonical")
        if not rows:
            raise GlossaryError(f"glossary group {group_id} has no canonical term (damaged glossary)")
        return rows[0]

    def _group_row(self, group_id: int):
        return next((g for g in self.store.glossary_groups() if g.id == group_id), None)

    def _describe(self, group_id: int) -> str:
        row = self._group_row(group_id)
        scope = f", scope {row.scope!r}" if row and row.scope else ""
        return f"group {group_id} ({self._canonical_of(group_id).surface!r}{scope})"

    def _resolve_group(self, ref: int | str) -> int:
        """A group by id (int or digits) or by canonical term."""
        text = str(ref).strip()
        if isinstance(ref, int) or text.isdigit():
            if self._group_row(int(text)) is None:
                raise GlossaryError(f"no glossary group with id {text} (see `kenning glossary ls`)")
            return int(text)
        key = self.key(text)
        ids = sorted({t.group_id for t in self._terms(key=key, status="canonical")})
        if not ids:
            raise GlossaryError(f"no glossary group named {text!r} (see `kenning glossary ls`)")
        if len(ids) > 1:
            raise GlossaryError(
                f"{text!r} names {len(ids)} groups ({', '.join(self._describe(i) for i in ids)}); give the id"
            )
        return ids[0]

    def _insert_group(self, scope: str, origin: str) -> int:
        return self.store.add_glossary_group(scope, origin)

    def _insert_term(
        self,
        group_id: int,
        surface: str,
        status: str,
        protected: str | None,
        origin: str,
        evidence: dict | None = None,
    ) -> int:
        return self.store.add_glossary_term(
            group_id,
            surface,
            self.key(surface),
            status,
            protected,
            origin,
            json.dumps(evidence, ensure_ascii=False) if evidence else None,
        )

    def _set_status(self, term_id: int, status: str) -> None:
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

    # ------------------------------------------------------------------------------------ reading
    def _load_lookup(self) -> None:
        generation = self.store.generation()
        if self._lookup is not None and self._lookup_generation == generation:
            return
        lookup: dict[str, list[tuple[int, str]]] = {}
        members: dict[int, list[tuple[str, str, str]]] = {}
        canonical: dict[int, str] = {}
        with self._reading():
            scopes = self._scopes()
            terms = self.store.glossary_terms()
        approved = [t for t in terms if t.status in APPROVED and t.group_id in scopes]
        approved.sort(key=lambda t: (t.group_id, t.status != "canonical", t.id))
        for t in approved:
            members.setdefault(t.group_id, []).append((t.surface, t.key, t.status))
            if t.status == "canonical":
                canonical[t.group_id] = t.surface
            lookup.setdefault(t.key, []).append((t.group_id, scopes[t.group_id]))
        self._lookup, self._members, self._canonical = lookup, members, canonical
        self._lookup_generation = generation

    def is_empty(self) -> bool:
        """No approved group at all: searches can skip glossary lookups entirely."""
        self._load_lookup()
        return not self._lookup

    def expansions(self, word: str, scopes: list[str] | None = None) -> list[Alternative]:
        """The approved other members of the group(s) holding `word`.

        `scopes=None` looks in every scope; a list looks in the global scope plus those collections.
        """
        self._load_lookup()
        key = self.key(word)
        hits = self._lookup.get(key) if key else None
        if not hits:
            return []
        allowed = None if scopes is None else {"", *scopes}
        out: list[Alternative] = []
        seen = {key}
        for gid, scope in hits:
            if allowed is not None and scope not in allowed:
                continue
            for surface, member_key, status in self._members.get(gid, []):
                if member_key in seen:
                    continue
                seen.add(member_key)
                out.append(Alternative(surface, gid, self._canonical.get(gid, surface), status))
        return out

    def _group_dict(self, gid: int, scope: str, origin: str, terms: list[_Term]) -> dict:
        canonical = next((t.surface for t in terms if t.status == "canonical"), "")
        members = []
        for t in sorted(terms, key=lambda t: (STATUSES.index(t.status), t.id)):
            member = {"term": t.surface, "status": t.status, "protected": t.protected}
            if t.evidence:
                member["evidence"] = json.loads(t.evidence)
            members.append(member)
        return {"id": gid, "scope": scope, "canonical": canonical, "origin": origin, "members": members}

    def groups(self, scope: str | None = None, include_proposed: bool = False) -> list[dict]:
        """Groups with their members, by id. `scope` keeps one scope ("" = global only).

        Groups that `suggest` created and nobody has approved anything in yet are proposals, shown by
        `pending`; `include_proposed` lists them here too.
        """
        with self._reading():
            groups = [g for g in self.store.glossary_groups() if scope is None or g.scope == scope]
            by_group: dict[int, list[_Term]] = {}
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
            scopes = self._scopes()
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
                    "evidence": json.loads(t.evidence) if t.evidence else None,
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
        with self._writing():
            gid = self._find_group(ckey, scope)
            if gid is None:
                gid = self._insert_group(scope, "manual")
                self._insert_term(gid, canonical, "canonical", flags[canonical], "manual")
            existing = {t.key: t for t in self._terms(group_id=gid)}
            for alias in aliases:
                key = self.key(alias)
                t = existing.get(key)
                if t is None:
                    term_id = self._insert_term(gid, alias, "alias", flags[alias], "manual")
                    existing[key] = _Term(term_id, gid, alias, key, "alias", flags[alias], "manual", None)
                elif t.status in ("pending", "rejected"):
                    self._set_status(t.id, "alias")
        return gid

    def _find_group(self, key: str, scope: str) -> int | None:
        """The group in `scope` whose canonical is `key`, else one where `key` is an approved alias."""
        scopes = self._scopes()
        rows = [t for t in self._terms(key=key) if t.status in APPROVED and scopes.get(t.group_id) == scope]
        rows.sort(key=lambda t: (t.status != "canonical", t.group_id))
        return rows[0].group_id if rows else None

    def _pick(self, term: str, group: int | str | None, statuses: tuple[str, ...]) -> _Term | None:
        """The one member called `term` with one of `statuses` (in `group` if given), or None when the
        term is in the glossary but not in those statuses; unknown or ambiguous terms raise."""
        key = self.key(term)
        gid = self._resolve_group(group) if group is not None else None
        rows = self._terms(key=key, group_id=gid) if gid is not None else self._terms(key=key)
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
        if hits:
            return hits[0]
        return None

    def approve(self, term: str, group: int | str | None = None) -> None:
        """Make a pending term an alias of its group. Approving a rejected term is refused."""
        with self._writing():
            hit = self._pick(term, group, ("pending",))
            if hit is not None:
                self._set_status(hit.id, "alias")
                return
            key = self.key(term)
            gid = self._resolve_group(group) if group is not None else None
            rows = [t for t in self._terms(key=key) if gid is None or t.group_id == gid]
            if any(t.status in APPROVED for t in rows):
                return  # already approved: nothing to do
            rejected = rows[0]
            raise GlossaryError(
                f"{term!r} was rejected from {self._describe(rejected.group_id)}; a rejected pair is not "
                f"approved again. If it does belong there, add it by hand: "
                f"kenning glossary add {self._canonical_of(rejected.group_id).surface!r} {term!r}"
            )

    def reject(self, term: str, group: int | str | None = None) -> None:
        """Reject a pending term (or withdraw an approved alias). The pair is never proposed again."""
        with self._writing():
            hit = self._pick(term, group, ("pending", "alias"))
            if hit is not None:
                self._set_status(hit.id, "rejected")
                return
            key = self.key(term)
            gid = self._resolve_group(group) if group is not None else None
            rows = [t for t in self._terms(key=key) if gid is None or t.group_id == gid]
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
        with self._writing():
            src, dst = self._resolve_group(source_group), self._resolve_group(target_group)
            if src == dst:
                raise GlossaryError(f"cannot merge {self._describe(src)} into itself")
            src_scope, dst_scope = self._group_row(src).scope, self._group_row(dst).scope
            if src_scope != dst_scope:
                raise GlossaryError(
                    f"{self._describe(src)} and {self._describe(dst)} have different scopes "
                    f"({src_scope or 'global'} / {dst_scope or 'global'}); only groups of one scope merge"
                )
            strength = {"canonical": 3, "alias": 2, "rejected": 1, "pending": 0}
            existing = {t.key: t for t in self._terms(group_id=dst)}
            for t in self._terms(group_id=src):
                status = "alias" if t.status == "canonical" else t.status
                have = existing.get(t.key)
                if have is None:
                    self.store.update_glossary_term(t.id, status, group_id=dst)
                    continue
                if strength[status] > strength[have.status]:
                    self._set_status(have.id, status)
                self.store.delete_glossary_term(t.id)
            if self._group_row(dst).origin == "suggest":
                self.store.set_glossary_group_origin(dst, "manual")
            self.store.delete_glossary_group(src)

    def split(self, term: str, group: int | str | None = None) -> int:
        """Take a term out of its group into a new group of its own (where it is canonical).

        It stays in the old group as `rejected`, so the pair is not proposed again. Splitting the
        canonical term hands the old group to its oldest alias. Returns the new group's id.
        """
        with self._writing():
            hit = self._pick(term, group, ("alias", "pending", "canonical"))
            if hit is None:
                raise GlossaryError(f"{term!r} is only a rejected term; there is nothing to split")
            old = hit.group_id
            scope = self._group_row(old).scope
            if hit.status == "canonical":
                heirs = self._terms(group_id=old, status="alias")
                if not heirs:
                    raise GlossaryError(
                        f"{term!r} is the canonical term of {self._describe(old)}, which has no alias to "
                        "take its place; nothing to split"
                    )
                self._set_status(heirs[0].id, "canonical")
            self._set_status(hit.id, "rejected")
            new = self._insert_group(scope, "manual")
            self._insert_term(new, hit.surface, "canonical", hit.protected, "manual")
            return new

    # ------------------------------------------------------------------------------------ import / export
    def export(self, fmt: str = "json") -> str:
        """Every group (proposals included) as JSON or CSV; `import_` reads it back."""
        groups = self.groups(include_proposed=True)
        if fmt == "json":
            data = {
                "kenning_glossary": EXPORT_VERSION,
                "groups": [
                    {
                        "scope": g["scope"],
                        "canonical": g["canonical"],
                        "protected": next(m["protected"] for m in g["members"] if m["status"] == "canonical"),
                        "members": [m for m in g["members"] if m["status"] != "canonical"],
                    }
                    for g in groups
                ],
            }
            return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        if fmt == "csv":
            buf = io.StringIO()
            writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
            writer.writeheader()
            for g in groups:
                for m in g["members"]:
                    writer.writerow(
                        {
                            "scope": g["scope"],
                            "group": g["canonical"],
                            "term": m["term"],
                            "status": m["status"],
                            "protected": m["protected"] or "",
                            "evidence": json.dumps(m["evidence"], ensure_ascii=False)
                            if m.get("evidence")
                            else "",
                        }
                    )
            return buf.getvalue()
        raise GlossaryError(f"unknown glossary format {fmt!r}: use json or csv")

    def _parse_json(self, text: str) -> list[dict]:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GlossaryError(f"not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
        if isinstance(data, dict):
            data = data.get("groups")
        if not isinstance(data, list):
            raise GlossaryError('a JSON glossary is {"groups": [...]} or a list of groups')
        rows = []
        for n, g in enumerate(data, 1):
            where = f"group {n}"
            if not isinstance(g, dict):
                raise GlossaryError(f"{where}: expected an object with canonical and members")
            canonical = g.get("canonical")
            if not isinstance(canonical, str) or not canonical.strip():
                raise GlossaryError(f"{where}: field 'canonical' is missing or not text")
            scope = g.get("scope", "") or ""
            if not isinstance(scope, str):
                raise GlossaryError(f"{where} ({canonical!r}): field 'scope' must be text")
            members = g.get("members", g.get("aliases", []))
            if not isinstance(members, list):
                raise GlossaryError(f"{where} ({canonical!r}): field 'members' must be a list")
            rows.append(
                {"where": where, "scope": scope, "group": canonical, "term": canonical, "status": "canonical"}
            )
            for k, m in enumerate(members, 1):
                mwhere = f"{where} ({canonical!r}) member {k}"
                if isinstance(m, str):
                    m = {"term": m, "status": "alias"}
                if not isinstance(m, dict) or not isinstance(m.get("term"), str):
                    raise GlossaryError(f"{mwhere}: field 'term' is missing or not text")
                rows.append(
                    {
                        "where": mwhere,
                        "scope": scope,
                        "group": canonical,
                        "term": m["term"],
                        "status": m.get("status", "alias"),
                        "protected": m.get("protected"),
                        "evidence": m.get("evidence"),
                    }
                )
        return rows

    def _parse_csv(self, text: str) -> list[dict]:
        reader = csv.DictReader(io.StringIO(text))
        header = reader.fieldnames or []
        missing = [f for f in ("group", "term") if f not in header]
        if missing:
            raise GlossaryError(
                f"line 1: CSV header must name the columns {', '.join(CSV_FIELDS)} "
                f"(missing: {', '.join(missing)})"
            )
        rows = []
        for row in reader:
            where = f"line {reader.line_num}"
            if None in row:
                raise GlossaryError(f"{where}: more fields than the header has")
            evidence = (row.get("evidence") or "").strip()
            if evidence:
                try:
                    evidence = json.loads(evidence)
                except json.JSONDecodeError as exc:
                    raise GlossaryError(f"{where}: field 'evidence' is not valid JSON ({exc.msg})") from exc
            rows.append(
                {
                    "where": where,
                    "scope": (row.get("scope") or "").strip(),
                    "group": row.get("group") or "",
                    "term": row.get("term") or "",
                    "status": (row.get("status") or "alias").strip() or "alias",
                    "protected": (row.get("protected") or "").strip() or None,
                    "evidence": evidence or None,
                }
            )
        return rows

    def import_(self, text: str, fmt: str = "json") -> dict:
        """Read groups from JSON or CSV (the shapes `export` writes) in one atomic commit.

        Groups are matched to existing ones by scope and canonical term and extended; a term already
        in the group keeps the stronger of the two statuses. Any bad row aborts the whole import with
        its line (CSV) or group (JSON) and field named. Returns counts of what changed.
        """
        if fmt == "json":
            rows = self._parse_json(text)
        elif fmt == "csv":
            rows = self._parse_csv(text)
        else:
            raise GlossaryError(f"unknown glossary format {fmt!r}: use json or csv")
        for r in rows:
            if r["status"] not in STATUSES:
                raise GlossaryError(
                    f"{r['where']}: field 'status' is {r['status']!r}; use one of {', '.join(STATUSES)}"
                )
            for field_name in ("group", "term"):
                if not str(r[field_name]).strip() or not self.key(str(r[field_name])):
                    raise GlossaryError(
                        f"{r['where']}: field {field_name!r} is empty or has no searchable words"
                    )
            r["group"], r["term"] = " ".join(r["group"].split()), " ".join(r["term"].split())
            if r["status"] == "canonical" and self.key(r["term"]) != self.key(r["group"]):
                raise GlossaryError(
                    f"{r['where']}: only the group's own term ({r['group']!r}) can be canonical"
                )
        flags = self.protection(sorted({r["term"] for r in rows if not r.get("protected")}))
        for r in rows:  # a canonical row's own flag (from an export) names the group's flag
            if r["status"] == "canonical" and r.get("protected"):
                flags[r["group"]] = r["protected"]
        strength = {"canonical": 3, "alias": 2, "rejected": 1, "pending": 0}
        counts = {"groups_created": 0, "terms_added": 0, "terms_updated": 0}
        with self._writing():
            for r in rows:
                gkey = self.key(r["group"])
                scopes = self._scopes()
                found = sorted(
                    t.group_id
                    for t in self._terms(key=gkey, status="canonical")
                    if scopes.get(t.group_id) == r["scope"]
                )
                if found:
                    gid = found[0]
                else:
                    gid = self._insert_group(r["scope"], "import")
                    self._insert_term(gid, r["group"], "canonical", flags.get(r["group"]), "import")
                    counts["groups_created"] += 1
                if r["status"] == "canonical":
                    continue
                have = self._terms(group_id=gid, key=self.key(r["term"]))
                if have:
                    if strength[r["status"]] > strength[have[0].status]:
                        self._set_status(have[0].id, r["status"])
                        counts["terms_updated"] += 1
                    continue
                protected = r.get("protected") or flags.get(r["term"])
                evidence = r.get("evidence") if isinstance(r.get("evidence"), dict) else None
                self._insert_term(gid, r["term"], r["status"], protected, "import", evidence)
                counts["terms_added"] += 1
        return counts

    # ------------------------------------------------------------------------------------ suggest
    def suggest(
        self,
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
        from kenning.glossary.miners import mine

        if limit <= 0:
            return []
        scope = (scope or "").strip()
        suggestions, corpus = mine(self.store, self.analyzer, miners=miners, collection=scope or None)
        if mined is not None:
            mined.append(corpus.share)
        added: list[dict] = []
        with self._writing():
            for s in suggestions:
                if len(added) >= limit:
                    break
                entry = self._propose(s, scope, corpus, judge)
                if entry is not None:
                    added.append(entry)
        return added

    def _propose(self, s, scope: str, corpus, judge: Judge | None) -> dict | None:
        ckey, akey = self.key(s.canonical), self.key(s.alias)
        if not ckey or not akey or ckey == akey:
            return None
        groups = {g.id: g for g in self.store.glossary_groups()}
        rows = [
            (t.group_id, t.key, t.status, groups[t.group_id].scope)
            for t in self.store.glossary_terms()
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
                for t in self._terms(key=ckey, status="canonical")
                if groups[t.group_id].scope == scope and groups[t.group_id].origin == "suggest"
            )
            if proposals:
                gid = proposals[0]
            else:
                gid = self._insert_group(scope, "suggest")
                self._insert_term(
                    gid, s.canonical, "canonical", corpus.phrase_protection(s.canonical), "suggest"
                )
            pending_surface = s.alias
        term_id = self._insert_term(
            gid, pending_surface, "pending", corpus.phrase_protection(pending_surface), "suggest", evidence
        )
        return {
            "id": term_id,
            "group": gid,
            "canonical": self._canonical_of(gid).surface,
            "term": pending_surface,
            "kind": s.kind,
            "score": round(s.score, 3),
            "evidence": evidence,
        }


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
        for word, _s, _e, mid in iter_words(row.body):
            stats.add(word, mid)
    return stats
