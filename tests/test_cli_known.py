"""The known-issues base on the command line: ``explain KI-…``, ``rules --known-issues``
and ``rules test --known-issues PATH`` (the contributor's check of a new entry)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit.cli import invoke as _run

from analyzers.knowledge.known_issues import DATA_DIR, load
from gpu_triage.cli import main

# A contributed entry as a support engineer would write it. The example is quoted from
# https://github.com/NVIDIA/k8s-device-plugin/pull/1561 (a maintainer explains there that
# one device NVML cannot open stops GFD before any label is written); the negative is a
# GFD start-up line quoted from https://github.com/NVIDIA/gpu-feature-discovery/issues/36.
GOOD = """\
schema_version = 1
prefix = "GFD"

[[issue]]
id = "KI-GFD-901"
title = "One GPU that NVML cannot open stops GFD before it writes any label"
components = ["gfd", "driver"]
source = "pod-log"
container = "*feature-discovery*"
needles = ["error creating labeler", "error getting device handle for index"]
cause = "GFD walks every GPU when it builds its labels and gives up at the first one NVML cannot open, so a single faulty GPU leaves the whole node unlabelled."
fix = "Find the GPU NVML fails on (nvidia-smi names it), then drain the node and reset or replace that GPU; GFD labels the node once every GPU opens."
commands = ["nvidia-smi -L", "kubectl get node NODE --show-labels"]
examples = ["E1105 17:45:39.017442       1 main.go:110] error creating labeler: error getting devices: error getting device handle for index '0': Unknown Error"]
sources = ["https://github.com/NVIDIA/k8s-device-plugin/pull/1561"]
negative = "2023/03/22 09:10:04 Detected non-Tegra platform: /sys/devices/soc0/family file not found"
established = "The device plugin maintainer described the failure and its mechanism in the pull request that makes GFD skip a failing device."
"""  # noqa: E501


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _entry(tmp_path: Path, text: str, name: str = "ticket.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_explain_prints_a_packaged_entry_with_its_source() -> None:
    code, out, _ = _run(["explain", "ki-toolkit-003"])
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == ("KI-TOOLKIT-003 · known issue · container-toolkit, containerd · "
                        "container-toolkit.toml")
    assert lines[2] == "Old toolkit image cannot read a containerd 2.x (version 3) config"
    assert "Matched in: pod-log (container nvidia-container-toolkit-ctr)" in lines
    assert "Conditions: toolkit <1.17.4; containerd >=2.0; cri containerd" in lines
    assert "  https://github.com/NVIDIA/gpu-operator/issues/2060" in lines
    assert ('  time="2026-01-21T12:32:09Z" level=fatal msg="Error: unable to load config: '
            'unsupported config version: 3"') in lines
    assert "Established:" in lines and "Cause:" in lines and "Fix:" in lines


def test_explain_an_unknown_entry_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "KI-TOOLKIT-999"]) == 2
    err = capsys.readouterr().err
    assert "unknown known issue 'KI-TOOLKIT-999'" in err
    assert "gpu-triage rules --known-issues" in err


def test_explain_finds_a_contributed_entry_before_it_is_packaged(tmp_path: Path) -> None:
    code, out, _ = _run(["explain", "KI-GFD-901", "--known-issues",
                         str(_entry(tmp_path, GOOD))])
    assert code == 0
    assert out.splitlines()[0] == "KI-GFD-901 · known issue · gfd, driver · ticket.toml"
    assert "  https://github.com/NVIDIA/k8s-device-plugin/pull/1561" in out.splitlines()


def test_rules_lists_known_issues_only_when_asked() -> None:
    code, out, _ = _run(["rules"])
    assert code == 0 and "KI-TOOLKIT-003" not in out
    assert any(line.startswith("KI001 ") for line in out.splitlines())
    code, out, _ = _run(["rules", "--known-issues"])
    assert code == 0
    assert len(out.splitlines()) == len(load())
    assert ("KI-TOOLKIT-003    container-toolkit  Old toolkit image cannot read a containerd "
            "2.x (version 3) config  [pod-log]") in out.splitlines()


def test_rules_known_issues_filters_by_component_and_prefix() -> None:
    code, out, _ = _run(["rules", "--known-issues", "--prefix", "toolkit"])
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines()]
    assert listed == sorted(i.id for i in load() if i.id.startswith("KI-TOOLKIT-"))
    code, out, _ = _run(["rules", "--known-issues", "--component", "eks"])
    listed = [line.split()[0] for line in out.splitlines()]
    assert listed == sorted(i.id for i in load() if "eks" in i.components)
    code, _, err = _run(["rules", "--component", "eks"])
    assert code == 2 and "add --known-issues" in err


def test_rules_test_passes_a_good_entry(tmp_path: Path) -> None:
    code, out, err = _run(["rules", "test", "--known-issues", str(_entry(tmp_path, GOOD))])
    assert code == 0, out + err
    assert out.splitlines() == [
        "PASS  KI-GFD-901 (ticket.toml)",
        "      note: not yet in ids.txt: append KI-GFD-901 there",
        "1 passed, 0 failed"]


def test_rules_test_finds_the_files_of_a_known_issues_directory(tmp_path: Path) -> None:
    (tmp_path / "data" / "known_issues").mkdir(parents=True)
    _entry(tmp_path / "data" / "known_issues", GOOD, "gfd.toml")
    code, out, _ = _run(["rules", "test", "--known-issues", str(tmp_path / "data")])
    assert code == 0
    assert out.splitlines()[0] == "PASS  KI-GFD-901 (gfd.toml)"


def test_rules_test_refuses_an_example_its_matcher_misses(tmp_path: Path) -> None:
    text = GOOD.replace('"error getting device handle for index"', '"error getting device count"')
    code, out, err = _run(["rules", "test", "--known-issues", str(_entry(tmp_path, text))])
    assert (code, out) == (2, "")
    assert "ticket.toml: issue #1 (KI-GFD-901)" in err
    assert "example #1 is not matched by its own matcher" in err


def test_rules_test_fails_an_id_of_the_packaged_base(tmp_path: Path) -> None:
    text = GOOD.replace("KI-GFD-901", "KI-GFD-001")
    code, out, _ = _run(["rules", "test", "--known-issues", str(_entry(tmp_path, text))])
    assert code == 1
    assert out.splitlines()[:2] == [
        "FAIL  KI-GFD-001 (ticket.toml)",
        "      KI-GFD-001 is already taken by KI-GFD-001 (packaged gfd-nfd.toml); use the "
        "next free number of KI-GFD- in ids.txt"]
    assert out.splitlines()[-1] == "0 passed, 1 failed"


def test_rules_test_fails_a_matcher_that_takes_a_packaged_negative(tmp_path: Path) -> None:
    text = GOOD.replace('"error creating labeler", "error getting device handle for index"',
                        '"Unknown Error"')
    code, out, _ = _run(["rules", "test", "--known-issues", str(_entry(tmp_path, text))])
    assert code == 1
    negative = next(i.negative for i in load() if i.id == "KI-DP-018")
    assert out.splitlines()[:2] == [
        "FAIL  KI-GFD-901 (ticket.toml)",
        f"      it matches the negative of KI-DP-018 (packaged device-plugin.toml): "
        f"{negative!r}"]


def test_rules_test_fails_a_negative_a_packaged_entry_takes(tmp_path: Path) -> None:
    taken = next(i for i in load() if i.id == "KI-GFD-003").examples[0]
    text = GOOD.replace("2023/03/22 09:10:04 Detected non-Tegra platform: /sys/devices/soc0/"
                        "family file not found", taken.replace('"', '\\"'))
    code, out, _ = _run(["rules", "test", "--known-issues", str(_entry(tmp_path, text))])
    assert code == 1
    assert (f"      KI-GFD-003 (packaged gfd-nfd.toml) matches its negative: {taken!r}"
            in out.splitlines())


def test_rules_test_needs_dir_or_known_issues() -> None:
    code, _, err = _run(["rules", "test"])
    assert code == 2 and "--known-issues PATH" in err


def test_rules_test_of_the_packaged_base_in_place_passes() -> None:
    code, out, _ = _run(["rules", "test", "--known-issues", str(DATA_DIR)])
    assert code == 0
    assert out.splitlines()[-1] == f"{len(load())} passed, 0 failed"
    assert "FAIL" not in out


def test_a_copy_of_a_packaged_file_is_not_a_collision_with_itself(tmp_path: Path) -> None:
    copy = _entry(tmp_path, (DATA_DIR / "gfd-nfd.toml").read_text(encoding="utf-8"))
    code, out, _ = _run(["rules", "test", "--known-issues", str(copy)])
    ids = sorted(i.id for i in load() if i.id.startswith("KI-GFD-"))
    assert code == 0
    assert [line.split()[1] for line in out.splitlines() if line.startswith("PASS")] == ids
