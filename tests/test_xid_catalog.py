"""The Xid catalog data file and its loader (analyzers/data/xid.toml, analyzers/knowledge/xid.py).

The catalog is checked on its own terms here: every Xid 1..176 present, every field well
formed, the wording this project's own. Comparing it with an extract of NVIDIA's catalog
is the job of ``python tools/xid_check.py XID_JSON``; the tests below run that check
against extracts made from the catalog itself.
"""

from __future__ import annotations

import importlib.util
import json
import re
import tomllib
from importlib.resources import files
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from analyzers.knowledge import packaged
from analyzers.knowledge.xid import (
    SEVERITIES,
    XidInfo,
    action_rank,
    catalog,
    is_known_action,
    lookup,
    severity_for,
)

CHECKER = Path(__file__).resolve().parents[1] / "tools" / "xid_check.py"
FAMILIES = ("A100", "H100", "B100", "GB200")
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
CATEGORIES = {
    "confidential_computing", "driver", "engine_exception", "gpu_hang", "gsp", "hardware",
    "informational", "memory_ecc", "nvlink", "pcie_bus", "power", "unused", "user_app",
    "virtualization",
}


@pytest.fixture(scope="module")
def raw_toml() -> dict[str, Any]:
    text = (files("analyzers") / "data" / "xid.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@pytest.fixture(scope="module")
def checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("xid_check", CHECKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _extract() -> list[dict[str, Any]]:
    """An extract of NVIDIA's catalog as the checker reads one, made from our catalog."""
    return [
        {
            "xid": number,
            "category": info.category,
            "action": info.action,
            "action_investigatory": info.action_investigatory,
            "applies_to": None if info.applies_to is None
            else {family: family in info.applies_to for family in FAMILIES},
            "mnemonic": info.mnemonic,
            "app_error": info.app_error,
            "source": info.source,
        }
        for number, info in catalog().items()
    ]


def test_catalog_covers_every_xid_from_1_to_176(raw_toml: dict[str, Any]) -> None:
    assert sorted(catalog()) == list(range(1, 177))
    assert list(raw_toml["xid"]) == [str(n) for n in range(1, 177)]
    assert all(info.known and info.xid == number for number, info in catalog().items())


def test_identifiers_are_well_formed() -> None:
    for number, info in catalog().items():
        assert info.category in CATEGORIES, number
        assert is_known_action(info.action), number
        assert info.action_investigatory is None or is_known_action(info.action_investigatory)
        assert info.mnemonic is not None, number  # the driver's name(s) for it, " / " between
        assert re.fullmatch(r"[A-Z][A-Z0-9_]+( / [A-Z][A-Z0-9_]+)*", info.mnemonic), number
        assert re.fullmatch(r"https://[^\s]+", info.source), number
        assert info.applies_to is not None or info.category == "unused" or number > 172, number
        if info.applies_to is not None:
            assert info.applies_to == tuple(f for f in FAMILIES if f in info.applies_to), number
        if info.app_error_since is not None:
            assert info.app_error and re.fullmatch(r"v\d+\.\d+\.\d+", info.app_error_since)


def test_toml_tables_use_only_known_keys(raw_toml: dict[str, Any]) -> None:
    assert list(raw_toml) == ["xid"]
    for key, table in raw_toml["xid"].items():
        assert key.isdigit()
        assert set(table) <= ALLOWED_KEYS, key
        assert {"name", "meaning", "category", "action", "app_error", "source"} <= set(table)


def test_app_error_set() -> None:
    assert {n for n, info in catalog().items() if info.app_error} == {13, 31, 43, 45, 68, 109}
    assert lookup(109).app_error_since == "v0.18.0"
    assert {n for n, info in catalog().items() if info.app_error_since} == {109}


def test_wording_is_well_formed() -> None:
    names = [info.name for info in catalog().values()]
    assert len(set(names)) == len(names)
    for number, info in catalog().items():
        assert info.name.strip() == info.name and 0 < len(info.name) <= 60, number
        assert info.meaning.strip() and info.meaning.rstrip().endswith("."), number
        assert info.meaning.lower() != info.name.lower(), number
        assert info.mnemonic is None or info.mnemonic.lower() not in info.meaning.lower(), number


def test_check_passes_on_a_matching_extract(
    checker: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert checker.check(_extract(), packaged.read_toml("xid")) == []
    source = tmp_path / "xid.json"
    source.write_text(json.dumps(_extract()), encoding="utf-8")
    assert checker.main([str(source)]) == 0
    assert capsys.readouterr().out == f"xid.toml matches {source} (176 Xids)\n"


def test_check_names_each_difference(
    checker: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extract = _extract()
    extract[78]["category"] = "hardware"               # Xid 79 moved to another category
    extract[12]["notes"] = "Field note. " + lookup(13).meaning  # our meaning in their note
    extract[0]["name"] = lookup(1).name.upper()         # their name equals ours
    extract[5]["mnemonic"] = None                      # Xid 6 lost its mnemonic
    extract.append(dict(extract[-1], xid=177))          # a code the catalog lacks
    committed = packaged.read_toml("xid")
    assert checker.check(extract, committed) == [
        "Xid 6: mnemonic is 'ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR' in xid.toml, None from "
        "the extract",
        "Xid 79: category is 'pcie_bus' in xid.toml, 'hardware' from the extract",
        "Xid 177: in the extract, not in xid.toml",
        "Xid 1: our name is the extract's name",
        "Xid 13: our meaning repeats the extract's notes: 'an sm trapped on an instruction'",
    ]
    source = tmp_path / "xid.json"
    source.write_text(json.dumps(extract), encoding="utf-8")
    assert checker.main([str(source)]) == 1
    assert capsys.readouterr().err.endswith("5 difference(s): edit xid.toml\n")


def test_check_wants_the_wording_of_every_code(checker: ModuleType, tmp_path: Path) -> None:
    committed = packaged.read_toml("xid")
    start = committed.index("[xid.5]\n")
    meaning = committed.index("meaning = ", start)
    edited = committed[:meaning] + committed[committed.index("\n", meaning) + 1:]
    extract = [entry for entry in _extract() if entry["xid"] != 176]
    assert checker.check(extract, edited) == ["Xid 5: no meaning in xid.toml",
                                              "Xid 176: in xid.toml, not in the extract"]
    toml = tmp_path / "xid.toml"
    toml.write_text(edited, encoding="utf-8")
    source = tmp_path / "xid.json"
    source.write_text(json.dumps(extract), encoding="utf-8")
    assert checker.main([str(source), "--toml", str(toml)]) == 1


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
