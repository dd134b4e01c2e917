"""Import and export: the glossary as a file, to keep under version control, review or move between
indexes.

Two formats, each read back by the other half: JSON (`{"kenning_glossary": 1, "groups": [...]}`, one
object per group with its canonical term and members) and CSV (one row per member, the columns in
CSV_FIELDS). An import is one atomic commit: any bad row aborts it, naming its line (CSV) or group
(JSON) and field.
"""

from __future__ import annotations

import csv
import io
import json

from kenning.glossary.curation import GlossaryCuration
from kenning.glossary.terms import STATUSES, STRENGTH, GlossaryError

EXPORT_VERSION = 1
CSV_FIELDS = ["scope", "group", "term", "status", "protected", "evidence"]


def export_glossary(curation: GlossaryCuration, fmt: str = "json") -> str:
    """Every group (proposals included) as JSON or CSV; `import_glossary` reads it back."""
    groups = curation.groups(include_proposed=True)
    if fmt == "json":
        data = {
            "kenning_glossary": EXPORT_VERSION,
            "groups": [
                {
                    "scope": g["scope"],
                    "canonical": g["canonical"],
                    # (a group without its canonical member is a damaged index's: exported as it is)
                    "protected": next(
                        (m["protected"] for m in g["members"] if m["status"] == "canonical"), None
                    ),
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


def _parse_json(text: str) -> list[dict]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GlossaryError(f"not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    except RecursionError as exc:
        raise GlossaryError("not a glossary: JSON nested deeper than Python's stack") from exc
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


def _parse_csv(text: str) -> list[dict]:
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
            except RecursionError as exc:
                raise GlossaryError(f"{where}: field 'evidence' is JSON nested too deep") from exc
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


def import_glossary(curation: GlossaryCuration, text: str, fmt: str = "json") -> dict:
    """Read groups from JSON or CSV (the shapes `export_glossary` writes) in one atomic commit.

    Groups are matched to existing ones by scope and canonical term and extended; a term already
    in the group keeps the stronger of the two statuses. Any bad row aborts the whole import with
    its line (CSV) or group (JSON) and field named. Returns counts of what changed.
    """
    if fmt == "json":
        rows = _parse_json(text)
    elif fmt == "csv":
        rows = _parse_csv(text)
    else:
        raise GlossaryError(f"unknown glossary format {fmt!r}: use json or csv")
    for r in rows:
        if r["status"] not in STATUSES:
            raise GlossaryError(
                f"{r['where']}: field 'status' is {r['status']!r}; use one of {', '.join(STATUSES)}"
            )
        for field_name in ("group", "term"):
            if not str(r[field_name]).strip() or not curation.key(str(r[field_name])):
                raise GlossaryError(f"{r['where']}: field {field_name!r} is empty or has no searchable words")
        r["group"], r["term"] = " ".join(r["group"].split()), " ".join(r["term"].split())
        if r["status"] == "canonical" and curation.key(r["term"]) != curation.key(r["group"]):
            raise GlossaryError(f"{r['where']}: only the group's own term ({r['group']!r}) can be canonical")
    flags = curation.protection(sorted({r["term"] for r in rows if not r.get("protected")}))
    for r in rows:  # a canonical row's own flag (from an export) names the group's flag
        if r["status"] == "canonical" and r.get("protected"):
            flags[r["group"]] = r["protected"]
    counts = {"groups_created": 0, "terms_added": 0, "terms_updated": 0}
    with curation.writing():
        for r in rows:
            gkey = curation.key(r["group"])
            scopes = curation.group_scopes()
            found = sorted(
                t.group_id
                for t in curation.members_where(key=gkey, status="canonical")
                if scopes.get(t.group_id) == r["scope"]
            )
            if found:
                gid = found[0]
            else:
                gid = curation.insert_group(r["scope"], "import")
                curation.insert_term(gid, r["group"], "canonical", flags.get(r["group"]), "import")
                counts["groups_created"] += 1
            if r["status"] == "canonical":
                continue
            have = curation.members_where(group_id=gid, key=curation.key(r["term"]))
            if have:
                if STRENGTH[r["status"]] > STRENGTH[have[0].status]:
                    curation.set_status(have[0].id, r["status"])
                    counts["terms_updated"] += 1
                continue
            protected = r.get("protected") or flags.get(r["term"])
            evidence = r.get("evidence") if isinstance(r.get("evidence"), dict) else None
            curation.insert_term(gid, r["term"], r["status"], protected, "import", evidence)
            counts["terms_added"] += 1
    return counts
