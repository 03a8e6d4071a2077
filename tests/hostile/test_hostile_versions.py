"""Version strings from the bundle: a long image tag is read in linear time, and a
containerd version of thousands of digits is no version.

- ``bundle.versions.image`` (the operator version facts read it for every
  container of every Deployment) searched the tag with ``\\d+(?:\\.\\d+)+`` from every
  position of a digit run: a 40 KB tag of digits took 32 s (quadratic).
- ``bundle.versions.containerd_major`` turned ``containerd://<5,000 digits>.0`` (a Node's
  ``containerRuntimeVersion``) into an int past Python's 4,300-digit limit: RT008 and
  RT009 ended in ``error``.

No timing is asserted: before the change the large tag did not end in a test run.
"""

from __future__ import annotations

import re
from pathlib import Path

from hostile_kit import HOSTILE, analyze_path, valid_files
from hypothesis import given
from hypothesis import strategies as st
from kit.bundles import write_dir

from analyzers.results.models import RuleStatus
from bundle.versions import containerd_major, image

NUMERIC_BEFORE = re.compile(r"(\d+(?:\.\d+)+)")


def test_a_tag_of_digits_without_a_dot_has_no_version() -> None:
    assert image("nvcr.io/nvidia/gpu-operator:" + "1" * 200_000) == ("gpu-operator", None)
    tag = "9" * 100_000 + "x1.2"
    assert image("registry.local/gpu-operator:" + tag) == ("gpu-operator", "1.2")
    assert image("nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04") == \
        ("container-toolkit", "1.17.8")


@HOSTILE
@given(st.text(alphabet="0123456789.v-x", max_size=30))
def test_the_version_read_is_the_one_read_before(tag: str) -> None:
    before = NUMERIC_BEFORE.search(tag)
    assert image("nvcr.io/nvidia/gpu-operator:" + tag)[1] == \
        (before[1] if before else None)


def test_a_containerd_version_of_thousands_of_digits_is_no_version(tmp_path: Path) -> None:
    assert containerd_major("containerd://" + "1" * 5000 + ".0") == 0
    assert containerd_major("containerd://2.0.5-k3s1.32") == 2
    assert containerd_major("containerd://v1.7.27") == 1
    files = valid_files()
    for item in files["cluster/nodes.json"]["items"]:
        item["status"]["nodeInfo"]["kubeletVersion"] = "v1.30.4+k3s1"
        item["status"]["nodeInfo"]["containerRuntimeVersion"] = \
            "containerd://" + "1" * 5000 + ".0"
    report = analyze_path(write_dir(tmp_path / "b", files))
    assert [(r.rule_id, r.reason) for r in report.rules if r.status is RuleStatus.ERROR] == []
    judged = {r.rule_id: r.status for r in report.rules}
    assert judged["RT008"] is not RuleStatus.SKIPPED and judged["RT009"] is not RuleStatus.SKIPPED
