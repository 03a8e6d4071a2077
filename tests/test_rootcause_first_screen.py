"""Issue 15: the first screen names the root cause and its chain before any symptom.

For every sample where a catalog-2 rule is the root (samples/scenarios_causes.py,
samples/scenarios_labels_fabric.py and dcgm-profiling-crashloop), the terminal summary
lists the root under ROOT CAUSES with the findings it explains on its ``explains:``
line, and no symptom stands there as a root of its own (a root that explains nothing
leads the list of other findings); the HTML report shows the root's card before any
symptom's.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Report
from bundle import open_bundle
from reports import html, text

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)

# sample -> (root, the symptoms that must be folded under it)
CHAINS = {
    "host-driver-under-container": ("OP012:gpu-2", ["OP001:gpu-2", "OP006:cluster-policy"]),
    "driver-build-no-headers": ("OP015:gpu-2", ["DRV003:gpu-2", "OP001:gpu-2", "OP008:gpu-2",
                                                "OP006:cluster-policy", "RT006:gpu-2"]),
    "vfio-bound-gpus": ("DRV010:gpu-2", ["DRV003:gpu-2", "OP001:gpu-2", "OP008:gpu-2",
                                         "OP006:cluster-policy", "RT006:gpu-2", "DRV009:gpu-2"]),
    "driver-too-old-for-gpu": ("DRV008:gpu-2", ["DRV003:gpu-2", "OP001:gpu-2", "OP008:gpu-2",
                                                "OP006:cluster-policy", "RT006:gpu-2",
                                                "DRV009:gpu-2"]),
    "dcgm-profiling-crashloop": ("OP013:gpu-2", ["OP001:gpu-2", "OP006:cluster-policy"]),
    "mig-reconfigure-busy": ("OP014:gpu-2", ["OP009:gpu-2"]),
    "smi-no-devices": ("DRV009:gpu-2", ["OP001:gpu-2", "OP008:gpu-2", "OP006:cluster-policy",
                                        "BND001:nvidia-smi-failed"]),
    "gpus-seen-unallocated": ("SC007:gpu-2", []),
    "crd-older-than-chart": ("OP016:clusterpolicies.nvidia.com", ["HELM002:gpu-operator"]),
    "hgx-nvswitch-sxid": ("DRV011:hgx-1/0000:05:00.0", ["DRV001:hgx-1/0000:17:00.0",
                                                        "OP005:hgx-1", "OP008:hgx-1"]),
}
_HEADLINE = re.compile(r"^  (?:CRITICAL|HIGH|MEDIUM|LOW|INFO)\s+(?P<rule>[A-Z]+\d{3})\s")


def _report(sample: str) -> Report:
    with open_bundle(SAMPLES / sample) as bundle:
        return analyze(bundle, discover().rules)


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    return {sample: _report(sample) for sample in CHAINS}


def _first_section(summary: str) -> list[str]:
    """The summary's first list: ROOT CAUSES, or OTHER FINDINGS where no finding
    explains another (a root without symptoms)."""
    lines = summary.splitlines()
    heading = "ROOT CAUSES" if "ROOT CAUSES" in lines else "OTHER FINDINGS"
    start = lines.index(heading) + 1
    return lines[start:lines.index("", start)]


@pytest.mark.parametrize("sample", sorted(CHAINS))
def test_text_summary_puts_the_root_first(sample: str, reports: dict[str, Report]) -> None:
    root, symptoms = CHAINS[sample]
    section = _first_section(text.render(reports[sample], width=1000))  # one line each
    rules = [m["rule"] for line in section if (m := _HEADLINE.match(line))]
    assert rules[0] == root.split(":")[0], section[0]
    # no symptom rule stands as a root of its own
    assert not {s.split(":")[0] for s in symptoms} & set(rules)
    if symptoms:  # the first entry's explains line names the whole chain
        explains = next(line for line in section if line.strip().startswith("explains:"))
        for symptom in symptoms:
            assert symptom in explains, symptom


@pytest.mark.parametrize("sample", sorted(CHAINS))
def test_html_shows_the_root_card_before_its_symptoms(sample: str,
                                                      reports: dict[str, Report]) -> None:
    root, symptoms = CHAINS[sample]
    page = html.render(reports[sample], generated_at=NOW)
    first = page.index(f"<code>{root}</code>")
    for symptom in symptoms:
        assert page.index(f"<code>{symptom}</code>") > first, symptom


# nfd-not-labelling: OP011 explains the same findings on both GPU nodes, which the
# explains line counts per rule (``OP003 ×2``) instead of naming each.
NFD_ROOT = "OP011:node-feature-discovery"
NFD_SYMPTOMS = [f"{rule}:{node}" for rule in ("OP003", "RT001", "OP008", "RT006")
                for node in ("gpu-1", "gpu-2")] + ["RT007:handler/nvidia-cdi",
                                                   "RT007:handler/nvidia-legacy"]


def test_nfd_not_labelling_first_screen() -> None:
    report = _report("nfd-not-labelling")
    section = _first_section(text.render(report))
    rules = [m["rule"] for line in section if (m := _HEADLINE.match(line))]
    assert rules == ["OP011"]
    explains = next(line for line in section if line.strip().startswith("explains:"))
    assert explains.split("explains:")[1].strip() == \
        "RT001 ×2, OP003 ×2, OP008 ×2, RT006 ×2, RT007 ×2"
    page = html.render(report, generated_at=NOW)
    first = page.index(f"<code>{NFD_ROOT}</code>")
    for symptom in NFD_SYMPTOMS:
        assert page.index(f"<code>{symptom}</code>") > first, symptom
