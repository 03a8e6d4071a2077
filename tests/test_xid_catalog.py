"""The Xid catalog data file and its loader (analyzers/data/xid.toml, analyzers/xid.py)."""

from __future__ import annotations

import json
import re
import tomllib
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from analyzers import datafiles
from analyzers.xid import (
    SEVERITIES,
    XidInfo,
    action_rank,
    catalog,
    is_known_action,
    lookup,
    severity_for,
)

REFERENCE = Path(__file__).resolve().parents[1] / ".." / "shared" / "reference" / "xid.json"
ALLOWED_KEYS = {
    "name",
    "meaning",
    "category",
    "action",
    "action_investigatory",
    "app_error",
    "app_error_since",
    "applies_to",
    "mnemonic",
    "source",
}


@pytest.fixture(scope="module")
def reference() -> dict[int, dict[str, Any]]:
    if not REFERENCE.is_file():
        pytest.skip(f"reference file not present: {REFERENCE}")
    entries = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return {int(e["xid"]): e for e in entries}


@pytest.fixture(scope="module")
def raw_toml() -> dict[str, Any]:
    text = (files("analyzers") / "data" / "xid.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def test_catalog_covers_exactly_the_reference(reference: dict[int, dict[str, Any]]) -> None:
    assert sorted(catalog()) == sorted(reference)
    assert sorted(catalog()) == list(range(1, 177))


def test_toml_tables_use_only_known_keys(raw_toml: dict[str, Any]) -> None:
    assert list(raw_toml) == ["xid"]
    for key, table in raw_toml["xid"].items():
        assert key.isdigit()
        assert set(table) <= ALLOWED_KEYS, key
        assert {"name", "meaning", "category", "action", "app_error", "source"} <= set(table)


def test_catalog_from_the_twin_equals_the_catalog_from_the_toml(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert datafiles.twin("xid") is not None
    from_twin = catalog()
    monkeypatch.setattr(datafiles, "twin", lambda name: None)
    from_toml = catalog.__wrapped__()
    assert list(from_toml.items()) == list(from_twin.items())
    assert len(from_toml) == 176


def test_identifiers_match_the_reference(reference: dict[int, dict[str, Any]]) -> None:
    for number, ref in reference.items():
        info = lookup(number)
        assert info.known, number
        assert info.xid == number
        assert info.category == ref["category"], number
        assert info.action == ref["action"], number
        assert info.action_investigatory == ref["action_investigatory"], number
        assert info.mnemonic == ref["mnemonic"], number
        assert info.source == ref["source"], number
        flags = ref["applies_to"]
        expected = (
            None
            if flags is None
            else tuple(k for k in ("A100", "H100", "B100", "GB200") if flags[k])
        )
        assert info.applies_to == expected, number


def test_app_error_set() -> None:
    assert {n for n, info in catalog().items() if info.app_error} == {13, 31, 43, 45, 68, 109}
    assert lookup(109).app_error_since == "v0.18.0"
    assert {n for n, info in catalog().items() if info.app_error_since} == {109}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def test_wording_is_our_own(reference: dict[int, dict[str, Any]]) -> None:
    for number, ref in reference.items():
        info = lookup(number)
        assert info.name.strip() and len(info.name) <= 60, number
        assert info.meaning.strip(), number
        assert info.meaning.rstrip().endswith("."), number
        theirs = [
            ref.get(k) for k in ("name", "notes", "legacy_name", "app_error_note", "mnemonic")
        ]
        for text in filter(None, theirs):
            assert info.meaning.strip().lower() != text.strip().lower(), number
            assert info.name.strip().lower() != text.strip().lower(), number
        # No run of six words copied from the reference notes.
        ours = " ".join(_words(info.meaning))
        note_words = _words(ref.get("notes") or "")
        for start in range(len(note_words) - 5):
            assert " ".join(note_words[start : start + 6]) not in ours, number


def test_every_bucket_is_ranked() -> None:
    for number, info in catalog().items():
        assert is_known_action(info.action), (number, info.action)
        if info.action_investigatory is not None:
            assert is_known_action(info.action_investigatory), (number, info.action_investigatory)


def test_action_rank_order() -> None:
    order = [
        "IGNORE",
        "CHECK_APP/CUDA",
        "RESTART_APP",
        "WORKFLOW_XID_45",
        "RESTART_VM",
        "WORKFLOW_XID_48",
        "RESET_GPU",
        "UPDATE_SWFW",
        "RESTART_BM",
        "CHECK_MECHANICALS",
        "CONTACT_SUPPORT",
    ]
    assert [action_rank(a) for a in order] == list(range(11))
    assert action_rank("reset_gpu") == action_rank(" RESET_GPU ") == 6
    assert action_rank("XID_154") == action_rank("RESTART_APP")
    assert action_rank("NONE_LISTED") == action_rank("UNDOCUMENTED") == action_rank("") == 0
    assert action_rank("SOMETHING_NEW") == 0
    assert not is_known_action("SOMETHING_NEW")


def test_unknown_xid_lookup() -> None:
    info = lookup(999)
    assert info == XidInfo(
        xid=999,
        name="Unknown Xid 999",
        meaning=info.meaning,
        category="unknown",
        action="UNDOCUMENTED",
        action_investigatory=None,
        app_error=False,
        app_error_since=None,
        applies_to=None,
        mnemonic=None,
        source="",
        known=False,
    )
    assert info.meaning
    assert lookup(0).name == "Unknown Xid 0"
    assert lookup(177).known is False
    assert severity_for(999) == "medium"


def test_known_lookup_example() -> None:
    info = lookup(79)
    assert (info.name, info.category, info.action, info.action_investigatory) == (
        "GPU fell off the bus",
        "pcie_bus",
        "RESTART_BM",
        "CONTACT_SUPPORT",
    )
    assert info.applies_to == ("A100", "H100", "B100", "GB200")
    assert lookup(79) is info
    assert catalog() is catalog()


@pytest.mark.parametrize(
    ("xid", "severity"),
    [
        (79, "critical"),
        (54, "critical"),
        (64, "critical"),
        (142, "critical"),
        (48, "high"),
        (95, "high"),
        (74, "high"),
        (119, "high"),
        (149, "high"),
        (171, "high"),
        (8, "medium"),
        (94, "medium"),
        (1, "medium"),
        (56, "medium"),
        (13, "low"),
        (31, "low"),
        (68, "low"),
        (109, "low"),
        (92, "low"),
        (43, "info"),
        (45, "info"),
        (63, "info"),
        (106, "info"),
        (154, "info"),
    ],
)
def test_severity_examples(xid: int, severity: str) -> None:
    assert severity_for(xid) == severity


def test_severity_follows_action_rank() -> None:
    level = {name: index for index, name in enumerate(SEVERITIES)}  # 0 = most severe
    ranked = [
        (action_rank(info.action), level[severity_for(n)], n)
        for n, info in catalog().items()
        if not info.app_error
        and info.category != "unused"
        and info.action not in ("NONE_LISTED", "UNDOCUMENTED")
        and n not in (64, 154)
    ]
    for rank_a, sev_a, a in ranked:
        for rank_b, sev_b, b in ranked:
            if rank_a > rank_b:
                assert sev_a <= sev_b, (a, b)


def test_every_severity_is_valid_and_app_errors_stay_low() -> None:
    for number, info in catalog().items():
        severity = severity_for(number)
        assert severity in SEVERITIES
        if info.app_error:
            assert severity in ("low", "info"), number
