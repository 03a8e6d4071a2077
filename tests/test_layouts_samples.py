"""Every shipped sample, written out as a troubleshoot bundle and as a must-gather tree
(samples/foreign_layouts.py), reads without a false problem and finds what the native
bundle finds; what a layout cannot hold is ``skipped`` or ``partial``, never ``passed``."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import LoadedRule, discover
from analyzers.results.models import Report, RuleStatus
from bundle import open_bundle

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
NAMES = sorted(p.parent.name for p in SAMPLES.glob("*/manifest.json"))


@cache
def _rules() -> list[LoadedRule]:
    return discover().rules


@cache
def _converter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("foreign_layouts",
                                                  SAMPLES / "foreign_layouts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ids(report: Report) -> list[str]:
    """Finding ids, less BND's: collection gaps belong to the tool that collected."""
    return sorted(f.id for f in report.findings if not f.rule_id.startswith("BND"))


# Without the node's files a layout cannot see that k3s and k0s loaded the nvidia runtime
# on their own: RT008 names the toolkit's misdirection on the healthy node too (true of
# that node, and harmless there, which only the native bundle can tell).
BLIND_EXTRA = {"k3s-toolkit-default-config": {"RT008:gpu-1"},
               "k0s-toolkit-default-paths": {"RT008:gpu-1"}}


def _same_or_unjudged(report: Report, native: Report, extra: set[str] | None = None) -> None:
    """Every native finding is found again, unless its rule says it could not judge
    fully (``skipped``/``partial``, or ``failed`` judged in part: the layout lacks the
    file); nothing new is found."""
    status = {r.rule_id: r.status for r in report.rules}
    # a rule that found something but judged in part (its reason says so) may miss more
    in_part = {r.rule_id for r in report.rules if "judged in part" in (r.reason or "")}
    found = set(_ids(report))
    unseen = [i for i in _ids(native)
              if i not in found and i.split(":")[0] not in in_part
              and status[i.split(":")[0]] in (RuleStatus.PASSED, RuleStatus.FAILED)]
    assert unseen == []
    assert sorted(found - set(_ids(native))) == sorted(extra or ())


def _report(path: Path) -> Report:
    with open_bundle(path) as opened:
        return analyze(opened, _rules())


@cache
def _native(name: str) -> Report:
    return _report(SAMPLES / name)


def test_the_samples_are_found() -> None:
    assert len(NAMES) >= 20
    assert "incident-toolkit-disabled" in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_troubleshoot_finds_what_the_native_bundle_finds(tmp_path: Path, name: str) -> None:
    _converter().troubleshoot(SAMPLES / name, tmp_path / "sb")
    report = _report(tmp_path / "sb")
    native = _native(name)
    assert report.bundle.layout == "replicated troubleshoot"
    assert [(p.path, p.message) for p in report.problems] == []
    _same_or_unjudged(report, native)
    assert report.bundle.gpu_nodes == native.bundle.gpu_nodes


@pytest.mark.parametrize("name", NAMES)
def test_must_gather_finds_what_it_holds_and_never_passes_what_it_lacks(
        tmp_path: Path, name: str) -> None:
    _converter().must_gather(SAMPLES / name, tmp_path / "mg")
    report = _report(tmp_path / "mg")
    native = _native(name)
    assert report.bundle.layout == "nvidia must-gather"
    assert [(p.path, p.message) for p in report.problems] == []
    _same_or_unjudged(report, native, BLIND_EXTRA.get(name, set()))


def test_must_gather_pods_are_partial_and_say_why(tmp_path: Path) -> None:
    _converter().must_gather(SAMPLES / "sched-too-big", tmp_path / "mg")
    report = _report(tmp_path / "mg")
    note = ("must-gather lists only the pods of namespace gpu-operator; workload pods in "
            "other namespaces are not in the bundle")
    assert [(n.path, n.note) for n in report.bundle.layout_partial] == [
        ("cluster/pods.json", note)]
    sc001 = next(r for r in report.rules if r.rule_id == "SC001")
    assert (sc001.status, sc001.reason) == (RuleStatus.PARTIAL,
                                            f"read in part: cluster/pods.json: {note}")
    assert "SC001:ml/train-70b-0" in {f.id for f in _native("sched-too-big").findings}
    assert not [f for f in report.findings if f.rule_id == "SC001"]


def test_native_and_troubleshoot_bundles_have_no_partial_layout() -> None:
    assert _native("sched-too-big").bundle.layout_partial == []


def test_without_any_product_name_cfg002_cannot_judge(tmp_path: Path) -> None:
    """The incident sample's nodes carry no product label; its must-gather tree has no
    nvidia-smi output (no driver pod, so no bug report): CFG002 cannot know the cards."""
    _converter().must_gather(SAMPLES / "incident-toolkit-disabled", tmp_path / "mg")
    report = _report(tmp_path / "mg")
    cfg002 = next(r for r in report.rules if r.rule_id == "CFG002")
    assert (cfg002.status, cfg002.reason) == (
        RuleStatus.SKIPPED, "no GPU node names its product (no nvidia.com/gpu.product label, "
                            "no readable nvidia-smi.xml)")
    native = {f.id for f in _native("incident-toolkit-disabled").findings}
    assert {"CFG002:gpu-a", "CFG002:gpu-d"} <= native


def test_troubleshoot_helm_histories_lack_descriptions(tmp_path: Path) -> None:
    """troubleshoot's Helm collector (pkg/collect/helm.go VersionInfo) keeps no revision
    description, where Helm writes why an upgrade failed: OP016 cannot read it there."""
    _converter().troubleshoot(SAMPLES / "crd-older-than-chart", tmp_path / "sb")
    report = _report(tmp_path / "sb")
    assert [n.path for n in report.bundle.layout_partial] == ["cluster/helm/gpu-operator.json"]
    op016 = next(r for r in report.rules if r.rule_id == "OP016")
    assert op016.status is RuleStatus.PARTIAL
    assert op016.reason is not None and "not its description" in op016.reason
    assert "OP016:clusterpolicies.nvidia.com" in _ids(_native("crd-older-than-chart"))
