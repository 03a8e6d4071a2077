"""Check ``analyzers/data/xid.toml`` against a JSON extract of NVIDIA's Xid catalog.

A developer tool, not part of the package: the extract is not in this repository, and
gpu-triage reads only ``xid.toml``, which is also the one copy of this project's wording
of each Xid (``name``, ``meaning``): edit it there. Run from the project root::

    python tools/xid_check.py XID_JSON     # exit 1 on any difference

``XID_JSON`` is a JSON list with one object per Xid, as NVIDIA's "Analyzing Xid Errors
with the Xid Catalog" (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)
describes each code: ``xid`` (the number), ``category`` (a cause category), ``action``
and ``action_investigatory`` (NVIDIA's immediate and follow-up resolution buckets; the
second may be null), ``applies_to`` (``{"A100": bool, "H100": bool, "B100": bool,
"GB200": bool}`` or null), ``mnemonic`` (the driver's symbolic name, or null),
``app_error`` (whether the Kubernetes device plugin skips it as an application error)
and ``source`` (the URL the entry came from). ``name``, ``notes``, ``legacy_name`` and
``app_error_note`` are read, where present, only to make sure none of their text was
copied into this project's wording.

The check reports each Xid whose identifiers in ``xid.toml`` differ from the extract's
(a new catalog revision, a slip in an edit), Xids on one side only, an entry without its
wording, and wording that repeats the extract's own. It changes nothing: a difference is
fixed by editing ``xid.toml``. ``app_error_since`` (the device-plugin release that first
skipped the Xid) is this project's finding, not the extract's, and is not compared.
``tests/test_xid_catalog.py`` checks the catalog on its own terms and needs no extract.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TARGET = Path(__file__).resolve().parent.parent / "analyzers" / "data" / "xid.toml"
FAMILIES = ("A100", "H100", "B100", "GB200")
# Keys of an extract entry whose text is NVIDIA's wording, not to be repeated in ours.
THEIR_WORDING = ("name", "notes", "legacy_name", "app_error_note", "mnemonic")
_COPIED_RUN = 6  # this many words in a row, taken from the extract's notes, count as copied


def identifiers(entry: dict[str, Any]) -> dict[str, object]:
    """The fields of ``xid.toml`` an extract entry gives, as the TOML holds them (a null
    in the extract is a key left out)."""
    found: dict[str, object] = {"category": str(entry["category"]),
                                "action": str(entry["action"]),
                                "app_error": bool(entry.get("app_error")),
                                "source": str(entry["source"])}
    if isinstance(entry.get("action_investigatory"), str):
        found["action_investigatory"] = entry["action_investigatory"]
    applies = entry.get("applies_to")
    if isinstance(applies, dict):
        found["applies_to"] = {family: bool(applies.get(family)) for family in FAMILIES}
    if isinstance(entry.get("mnemonic"), str):
        found["mnemonic"] = entry["mnemonic"]
    return found


def load(source: Path) -> list[dict[str, Any]]:
    entries = json.loads(source.read_text(encoding="utf-8"))
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SystemExit(f"{source}: expected a JSON list of objects, one per Xid")
    return entries


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def copied_wording(number: int, ours: dict[str, Any], entry: dict[str, Any]) -> list[str]:
    """Where the name or meaning of ``number`` in ``xid.toml`` repeats the extract's text."""
    name, meaning = str(ours.get("name", "")), str(ours.get("meaning", ""))
    found = []
    for key in THEIR_WORDING:
        theirs = entry.get(key)
        if not isinstance(theirs, str) or not theirs.strip():
            continue
        for label, mine in (("name", name), ("meaning", meaning)):
            if mine.strip().lower() == theirs.strip().lower():
                found.append(f"Xid {number}: our {label} is the extract's {key}")
    ours_joined = " ".join(_words(meaning))
    notes = _words(entry.get("notes") or "")
    for start in range(len(notes) - _COPIED_RUN + 1):
        run = " ".join(notes[start:start + _COPIED_RUN])
        if run in ours_joined:
            found.append(f"Xid {number}: our meaning repeats the extract's notes: {run!r}")
            break
    return found


def check(entries: list[dict[str, Any]], committed: str) -> list[str]:
    """Every difference between ``committed`` (the text of xid.toml) and ``entries``;
    empty when the catalog holds the extract's identifiers and its wording is its own."""
    extract = {str(entry["xid"]): entry for entry in entries}
    have = tomllib.loads(committed).get("xid", {})
    problems: list[str] = []
    for key in sorted(set(extract) | set(have), key=int):
        if key not in have:
            problems.append(f"Xid {key}: in the extract, not in xid.toml")
            continue
        if key not in extract:
            problems.append(f"Xid {key}: in xid.toml, not in the extract")
            continue
        ours = have[key]
        missing = [field for field in ("name", "meaning") if not str(ours.get(field, "")).strip()]
        if missing:
            problems.append(f"Xid {key}: no {' or '.join(missing)} in xid.toml")
        wanted = identifiers(extract[key])
        compared = {field: ours[field] for field in ours
                    if field not in ("name", "meaning", "app_error_since")}
        for field in sorted(set(wanted) | set(compared)):
            if wanted.get(field) != compared.get(field):
                problems.append(f"Xid {key}: {field} is {compared.get(field)!r} in "
                                f"xid.toml, {wanted.get(field)!r} from the extract")
    for key, entry in extract.items():
        if key in have:
            problems.extend(copied_wording(int(key), have[key], entry))
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/xid_check.py",
        description="Check xid.toml against a JSON extract of NVIDIA's Xid catalog.")
    parser.add_argument("source", metavar="XID_JSON", type=Path,
                        help="the extract: a JSON list of one object per Xid")
    parser.add_argument("--toml", type=Path, default=TARGET,
                        help="the catalog to check (default: the packaged xid.toml)")
    args = parser.parse_args(argv)
    entries = load(args.source)
    problems = check(entries, args.toml.read_text(encoding="utf-8"))
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} difference(s): edit xid.toml", file=sys.stderr)
        return 1
    print(f"xid.toml matches {args.source} ({len(entries)} Xids)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
