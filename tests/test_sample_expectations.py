"""What the analyzer must find in each sample bundle of the runtime and number gates.

Each sample under samples/ is run through the real analyzer (``open_bundle`` and
``analyze`` with every discovered rule). For each sample the test pins:

- the exact set of findings at medium severity or above (rule, subject, severity):
  the diagnosis, with nothing missing and nothing invented;
- the chain: which finding is the root cause (no ``caused_by``) and which findings
  hang under it;
- for the number gate, the per-node arithmetic (capacity, allocatable, assigned) and
  the branch SC001 decides.

Where a rule does not yet deliver what rule-catalog.md promises on a sample, the
expectation stays as written and is marked ``xfail(strict=True)`` with the reason, so
it turns into a failure the day the rule is fixed and the marker must go.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.facts import Facts
from analyzers.facts.scheduling import Branch
from analyzers.results.models import Finding, Report
from bundle import Bundle, open_bundle
from reports.view import build as build_view

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
_OPENED: dict[str, Bundle] = {}


def opened(sample: str) -> Bundle:
    """Each sample is opened once for the module and closed at its end."""
    if sample not in _OPENED:
        _OPENED[sample] = open_bundle(SAMPLES / sample)
    return _OPENED[sample]


@pytest.fixture(scope="module", autouse=True)
def _close_bundles() -> Iterator[None]:
    yield
    report.cache_clear()
    facts.cache_clear()
    for bundle in _OPENED.values():
        bundle.close()
    _OPENED.clear()


@functools.cache
def report(sample: str) -> Report:
    return analyze(opened(sample), discover().rules)


@functools.cache
def facts(sample: str) -> Facts:
    return Facts(opened(sample))


def finding(sample: str, finding_id: str) -> Finding:
    found = {f.id: f for f in report(sample).findings}
    assert finding_id in found, f"{finding_id} not among {sorted(found)}"
    return found[finding_id]


def ancestors(sample: str, finding_id: str) -> set[str]:
    """Every finding reachable upwards through ``caused_by``."""
    by_id = {f.id: f for f in report(sample).findings}
    seen: set[str] = set()
    todo = list(by_id[finding_id].caused_by)
    while todo:
        current = todo.pop()
        if current in seen or current not in by_id:
            continue
        seen.add(current)
        todo.extend(by_id[current].caused_by)
    return seen


def rows(sample: str, pod: str, resource: str = "nvidia.com/gpu"
         ) -> tuple[Branch, dict[str, tuple[int | None, int | None, int]], tuple[str, ...]]:
    """SC001's arithmetic for one pending pod: branch, per node (capacity,
    allocatable, assigned), and the nodes that make the branch."""
    namespace, name = pod.split("/")
    verdict = facts(sample).gate_verdicts[(namespace, name)]
    result = next(r for r in verdict.resources if r.resource == resource)
    table = {row.node: (row.capacity, row.allocatable, row.assigned) for row in result.rows}
    return result.branch, table, result.culprits


# ------------------------------------------------------------ every serious finding

EXPECTED: dict[str, dict[str, str]] = {
    "dropin-clobber": {
        "RT002:gpu-2": "critical",
        "RT002:gpu-3": "critical",
        "RT001:gpu-2": "critical",
        "RT001:gpu-3": "critical",
        "OP001:gpu-2": "high",
        "OP001:gpu-3": "high",
        "OP008:gpu-2": "high",
        "OP008:gpu-3": "high",
        "OP006:cluster-policy": "high",
        "SC001:ml/trainer-0": "medium",
    },
    "helm-dropped-values": {
        "HELM001:gpu-operator/2": "high",
        "OP001:gpu-1": "high",
        "OP001:gpu-2": "high",
        "OP006:cluster-policy": "high",
        # the container fights the host driver it was re-enabled over
        "OP012:gpu-1": "high",
        "OP012:gpu-2": "high",
        # with driver.enabled back on, the nodes count as driver-container nodes
        "DRV005:gpu-1": "medium",
        "DRV005:gpu-2": "medium",
        # what Kubernetes records of it: the driver container's crash loop, under OP012
        "CMP007:gpu-operator/nvidia-driver-daemonset": "high",
    },
    "sched-full": {"SC001:ml/eval-harness-ckc7g": "medium"},
    "sched-unhealthy": {
        "DRV002:gpu-1/0000:b1:00.0": "critical",
        "DRV001:gpu-1/0000:b1:00.0": "critical",
        "OP008:gpu-1": "high",
        "SC001:vision/train-vit-h-0": "high",
    },
    "sched-not-advertised": {"SC001:research/llm-notebook-0": "high", "OP008:gpu-1": "high",
                             "OP008:gpu-2": "high"},
    "sched-too-big": {"SC001:ml/train-70b-0": "medium"},
    "sched-taint": {"SC002:research/whisper-finetune-0": "medium"},
    "sched-quota": {"SC004:team-a/gpu-quota": "medium"},
    "timeslicing": {
        "SC005:gpu-2": "high",
        "SC006:render/sdxl-render-5f7d9c8b6d": "medium",
    },
    "mig-mixed": {
        "SC001:default/cuda-smoke": "high",
        "SC001:ml/llm-eval-0": "medium",
    },
    # the profiling counters held by the node's own DCGM:
    # https://github.com/NVIDIA/dcgm-exporter/issues/148 and /issues/7
    "dcgm-profiling-crashloop": {
        "OP013:gpu-2": "medium",
        "OP001:gpu-2": "medium",
        "OP006:cluster-policy": "high",
        # the exporter's crash loop as Kubernetes records it, under OP013
        "CMP007:gpu-operator/nvidia-dcgm-exporter": "medium",
    },
}


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_serious_findings_are_exactly_the_diagnosis(sample: str) -> None:
    got = {f.id: f.severity.value for f in report(sample).findings if f.severity.rank >= 2}
    assert got == EXPECTED[sample]


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_no_rule_errors(sample: str) -> None:
    errors = [(r.rule_id, r.reason) for r in report(sample).rules if r.status.value == "error"]
    assert errors == []


# ------------------------------------------------------------------ dropin-clobber

AFFECTED = ("gpu-2", "gpu-3")
CLEAN = ("gpu-1", "gpu-4")


def test_dropin_sample_dump_is_real_evidence() -> None:
    """The committed dumps show what containerd 1.6.20 made of the files."""
    for node in (*AFFECTED, *CLEAN):
        base = SAMPLES / "dropin-clobber" / "nodes" / node / "containerd"
        dump = (base / "config-dump.toml").read_text(encoding="utf-8")
        has_registry = (base / "files/etc/containerd/conf.d/zz-registry.toml").exists()
        assert has_registry is (node in AFFECTED)
        assert (dump.count("runtimes.nvidia") == 0) is (node in AFFECTED)
        assert tomllib.loads(dump)["imports"][-1].endswith(
            "zz-registry.toml" if node in AFFECTED else "99-nvidia.toml")


@pytest.mark.parametrize("node", AFFECTED)
def test_dropin_root_cause_is_the_registry_dropin(node: str) -> None:
    rt002 = finding("dropin-clobber", f"RT002:{node}")
    assert rt002.caused_by == []
    assert rt002.nodes == [node]
    assert "/etc/containerd/conf.d/zz-registry.toml" in rt002.summary
    assert "/etc/containerd/conf.d/99-nvidia.toml" in rt002.summary
    assert "zz-registry.toml" in rt002.evidence[0].path
    rt001 = finding("dropin-clobber", f"RT001:{node}")
    assert rt001.caused_by == [f"RT002:{node}"]
    assert rt001.nodes == [node]


@pytest.mark.parametrize("node", AFFECTED)
def test_dropin_operands_hang_under_the_clobber(node: str) -> None:
    for rule in ("OP001", "OP008"):
        found = finding("dropin-clobber", f"{rule}:{node}")
        assert found.nodes == [node]
        assert found.caused_by == [f"RT001:{node}"]
        assert f"RT002:{node}" in ancestors("dropin-clobber", found.id)
    op001 = finding("dropin-clobber", f"OP001:{node}")
    assert "toolkit stage" in op001.summary
    assert any("nvidia-device-plugin-daemonset" in o.name for o in op001.objects)


def test_dropin_clean_nodes_have_no_runtime_or_operator_findings() -> None:
    for f in report("dropin-clobber").findings:
        if f.rule_id.startswith(("RT", "OP")):
            assert not set(f.nodes) & set(CLEAN), f.id


def test_dropin_pending_pod_numbers() -> None:
    branch, table, culprits = rows("dropin-clobber", "ml/trainer-0")
    assert table == {
        "gpu-1": (2, 2, 2),
        "gpu-2": (None, None, 0),
        "gpu-3": (None, None, 0),
        "gpu-4": (2, 2, 2),
    }
    sc001 = finding("dropin-clobber", "SC001:ml/trainer-0")
    assert "gpu-2 -/-/0/0" in sc001.summary and "gpu-3 -/-/0/0" in sc001.summary
    assert branch is Branch.FULL and culprits == ("gpu-1", "gpu-4")


def test_dropin_pending_pod_hangs_under_the_clobber() -> None:
    sc001 = finding("dropin-clobber", "SC001:ml/trainer-0")
    assert {"RT002:gpu-2", "RT002:gpu-3"} <= ancestors("dropin-clobber", sc001.id)
    assert {"gpu-2", "gpu-3"} <= set(sc001.nodes)


# -------------------------------------------------------------- helm-dropped-values


def test_helm_dropped_value_is_the_root() -> None:
    helm = finding("helm-dropped-values", "HELM001:gpu-operator/2")
    assert helm.caused_by == []
    assert "driver.enabled: false" in helm.summary
    assert "revision 2" in helm.summary and "revision 1" in helm.summary


@pytest.mark.parametrize("node", ["gpu-1", "gpu-2"])
def test_helm_driver_pods_crash_on_the_host_driver(node: str) -> None:
    op001 = finding("helm-dropped-values", f"OP001:{node}")
    assert op001.nodes == [node]
    assert "driver stage" in op001.summary and "CrashLoopBackOff" in op001.summary
    assert any("driver is in use" in e.excerpt and e.path.endswith("nvidia-driver-ctr.log")
               for e in op001.evidence)


@pytest.mark.parametrize("node", ["gpu-1", "gpu-2"])
def test_helm_driver_pods_hang_under_the_dropped_value(node: str) -> None:
    op001 = finding("helm-dropped-values", f"OP001:{node}")
    assert "HELM001:gpu-operator/2" in ancestors("helm-dropped-values", op001.id)


# --------------------------------------------------------------------- number gate


def test_sched_full() -> None:
    branch, table, culprits = rows("sched-full", "ml/eval-harness-ckc7g")
    assert table == {"gpu-1": (4, 4, 4), "gpu-2": (4, 4, 4)}
    assert branch is Branch.FULL and culprits == ("gpu-1", "gpu-2")
    sc001 = finding("sched-full", "SC001:ml/eval-harness-ckc7g")
    assert sc001.caused_by == []
    assert sc001.nodes == ["gpu-1", "gpu-2"]


def test_sched_unhealthy() -> None:
    branch, table, culprits = rows("sched-unhealthy", "vision/train-vit-h-0")
    assert table == {"gpu-1": (8, 7, 0), "gpu-2": (8, 8, 4)}
    assert branch is Branch.UNHEALTHY and culprits == ("gpu-1",)
    gpu = "gpu-1/0000:b1:00.0"
    assert finding("sched-unhealthy", f"DRV002:{gpu}").caused_by == []
    assert finding("sched-unhealthy", f"DRV001:{gpu}").caused_by == [f"DRV002:{gpu}"]
    sc001 = finding("sched-unhealthy", "SC001:vision/train-vit-h-0")
    assert sc001.nodes == ["gpu-1"]
    assert f"DRV002:{gpu}" in sc001.caused_by
    op008 = finding("sched-unhealthy", "OP008:gpu-1")
    assert "unhealthy" in op008.summary
    assert f"DRV002:{gpu}" in ancestors("sched-unhealthy", op008.id)
    for f in report("sched-unhealthy").findings:
        if f.rule_id.startswith(("DRV", "OP")):
            assert "gpu-2" not in f.nodes, f.id


def test_sched_not_advertised() -> None:
    branch, table, culprits = rows("sched-not-advertised", "research/llm-notebook-0")
    assert table == {"gpu-1": (None, None, 0), "gpu-2": (None, None, 0)}
    assert branch is Branch.NOT_ADVERTISED and culprits == ("gpu-1", "gpu-2")
    sc001 = finding("sched-not-advertised", "SC001:research/llm-notebook-0")
    assert sc001.nodes == ["gpu-1", "gpu-2"]
    assert "not registered" in sc001.summary


def test_sched_not_advertised_names_the_missing_plugin() -> None:
    for node in ("gpu-1", "gpu-2"):
        finding("sched-not-advertised", f"OP008:{node}")
    sc001 = finding("sched-not-advertised", "SC001:research/llm-notebook-0")
    assert {"OP008:gpu-1", "OP008:gpu-2"} <= set(sc001.caused_by)


def test_sched_too_big() -> None:
    branch, table, culprits = rows("sched-too-big", "ml/train-70b-0")
    assert table == {"gpu-1": (4, 4, 2), "gpu-2": (4, 4, 0)}
    assert branch is Branch.EXCEEDS and culprits == ("gpu-1", "gpu-2")
    sc001 = finding("sched-too-big", "SC001:ml/train-70b-0")
    assert sc001.caused_by == []
    assert "never fit" in sc001.summary


def test_sched_taint() -> None:
    branch, table, culprits = rows("sched-taint", "research/whisper-finetune-0")
    assert table == {"gpu-1": (4, 4, 2), "gpu-2": (4, 4, 0)}
    assert branch is Branch.BLOCKED and culprits == ("gpu-1", "gpu-2")
    sc002 = finding("sched-taint", "SC002:research/whisper-finetune-0")
    assert sc002.nodes == ["gpu-1", "gpu-2"]
    assert "dedicated=gpu:NoSchedule" in sc002.summary
    assert "key: dedicated" in sc002.remediation
    assert not [f for f in report("sched-taint").findings if f.rule_id == "SC001"]


def test_sched_quota() -> None:
    sc004 = finding("sched-quota", "SC004:team-a/gpu-quota")
    assert sc004.caused_by == []
    assert "requests.nvidia.com/gpu used 4 of 4" in sc004.summary
    assert "refused 13 pod creation(s)" in sc004.summary
    # the nodes have room: the quota, not the hardware, is the limit
    counts = facts("sched-quota").accounting
    assert [(counts[n].count().allocatable, counts[n].count().assigned)
            for n in ("gpu-1", "gpu-2")] == [(4, 4), (4, 0)]
    assert not [f for f in report("sched-quota").findings if f.rule_id == "SC001"]


def test_timeslicing() -> None:
    sc006 = finding("timeslicing", "SC006:render/sdxl-render-5f7d9c8b6d")
    assert sc006.caused_by == [] and sc006.nodes == ["gpu-2"]
    assert "maximum request size for shared resources is 1" in sc006.summary
    sc005 = finding("timeslicing", "SC005:gpu-2")
    assert "SC006:render/sdxl-render-5f7d9c8b6d" in sc005.caused_by
    assert "3 pod(s)" in sc005.summary
    for node, assigned in (("gpu-1", 2), ("gpu-2", 1)):
        cfg003 = finding("timeslicing", f"CFG003:{node}")
        assert "16 nvidia.com/gpu slots on 4 physical GPU(s)" in cfg003.summary
        count = facts("timeslicing").accounting[node].count()
        assert (count.capacity, count.allocatable, count.assigned) == (16, 16, assigned)


def test_mig_mixed() -> None:
    mig = "nvidia.com/mig-3g.20gb"
    branch, table, culprits = rows("mig-mixed", "ml/llm-eval-0", mig)
    assert table == {"gpu-1": (4, 4, 4), "gpu-2": (4, 4, 4)}
    assert branch is Branch.FULL and culprits == ("gpu-1", "gpu-2")
    branch, table, _ = rows("mig-mixed", "default/cuda-smoke")
    assert branch is Branch.NOT_ADVERTISED
    assert table == {"gpu-1": (None, None, 0), "gpu-2": (None, None, 0)}
    smoke = finding("mig-mixed", "SC001:default/cuda-smoke")
    assert "nvidia.com/mig-1g.5gb" in smoke.summary and mig in smoke.summary
    assert not [f for f in report("mig-mixed").findings if f.rule_id == "OP009"]


# ------------------------------------------------------ dcgm-profiling-crashloop


def test_dcgm_profiling_is_the_root_of_the_crashing_exporter() -> None:
    op013 = finding("dcgm-profiling-crashloop", "OP013:gpu-2")
    assert op013.caused_by == [] and op013.nodes == ["gpu-2"]
    assert "another DCGM host engine or a profiler holds" in op013.summary
    assert any(e.path.endswith("nvidia-dcgm-exporter.log")
               and "third-party Profiling module" in e.excerpt for e in op013.evidence)
    for fid in ("OP001:gpu-2", "OP006:cluster-policy"):
        assert "OP013:gpu-2" in ancestors("dcgm-profiling-crashloop", fid), fid
    op001 = finding("dcgm-profiling-crashloop", "OP001:gpu-2")
    assert "No rule identified" not in op001.summary
    assert not [f for f in report("dcgm-profiling-crashloop").findings
                if f.rule_id.startswith(("OP", "DRV")) and "gpu-1" in f.nodes]


def test_op013_stays_quiet_on_every_other_sample() -> None:
    others = sorted(p.name for p in SAMPLES.iterdir()
                    if (p / "manifest.json").is_file() and p.name != "dcgm-profiling-crashloop")
    assert others
    for sample in others:
        assert not [f.id for f in report(sample).findings if f.rule_id == "OP013"], sample


# ------------------------------------------- the runtime gate on distributions (issue 14)

# Each sample: one failing GPU node (gpu-2) and one healthy one (gpu-1) of the same
# distribution; the real failure and its public thread are in samples/scenarios_distro.py.
# RT007 (a RuntimeClass whose handler no node defines) is a cluster-wide consequence, not
# gpu-2's cause: k3s adds nvidia, nvidia-cdi and nvidia-experimental itself but no
# nvidia-legacy; the k0s and MicroK8s admins added only the nvidia runtime by hand.
DISTRO_EXPECTED: dict[str, dict[str, str]] = {
    "k3s-toolkit-default-config": {
        "RT008:gpu-2": "critical",
        "RT001:gpu-2": "critical",
        "OP001:gpu-2": "high",
        "OP008:gpu-2": "high",
        "OP006:cluster-policy": "high",
        "SC001:ml/eval-0": "medium",
        "RT007:handler/nvidia-legacy": "medium",
    },
    "rke2-template-go-directives": {
        "RT009:gpu-2": "critical",
        "RT001:gpu-2": "critical",
        "OP001:gpu-2": "high",
        "OP008:gpu-2": "high",
        "OP006:cluster-policy": "high",
        # the toolkit container's crash loop, under RT001
        "CMP007:gpu-operator/nvidia-container-toolkit-daemonset": "high",
    },
    "k0s-toolkit-default-paths": {
        "RT008:gpu-2": "critical",
        "RT001:gpu-2": "critical",
        "OP001:gpu-2": "high",
        "OP008:gpu-2": "high",
        "OP006:cluster-policy": "high",
        "RT007:handler/nvidia-cdi": "medium",
        "RT007:handler/nvidia-legacy": "medium",
    },
    "microk8s-toolkit-edits-generated-config": {
        "RT009:gpu-2": "critical",
        "RT001:gpu-2": "critical",
        "OP001:gpu-2": "high",
        "OP008:gpu-2": "high",
        "OP006:cluster-policy": "high",
        "RT007:handler/nvidia-cdi": "medium",
        "RT007:handler/nvidia-legacy": "medium",
    },
    "openshift-crio-no-nvidia-handler": {"RT010:gpu-2": "critical"},
}
# the root cause each sample must name on gpu-2, and the findings that hang under it
DISTRO_ROOTS = {
    "k3s-toolkit-default-config": ("RT008:gpu-2", ["RT001:gpu-2", "OP001:gpu-2", "OP008:gpu-2",
                                                   "OP006:cluster-policy", "SC001:ml/eval-0"]),
    "rke2-template-go-directives": ("RT009:gpu-2", ["RT001:gpu-2", "OP001:gpu-2", "OP008:gpu-2",
                                                    "OP006:cluster-policy"]),
    "k0s-toolkit-default-paths": ("RT008:gpu-2", ["RT001:gpu-2", "OP001:gpu-2", "OP008:gpu-2",
                                                  "OP006:cluster-policy"]),
    "microk8s-toolkit-edits-generated-config": ("RT009:gpu-2", ["RT001:gpu-2", "OP001:gpu-2",
                                                                "OP008:gpu-2",
                                                                "OP006:cluster-policy"]),
    "openshift-crio-no-nvidia-handler": ("RT010:gpu-2", []),
}
DISTRO_OF = {"k3s-toolkit-default-config": ("k3s", "containerd"),
             "rke2-template-go-directives": ("rke2", "containerd"),
             "k0s-toolkit-default-paths": ("k0s", "containerd"),
             "microk8s-toolkit-edits-generated-config": ("microk8s", "containerd"),
             "openshift-crio-no-nvidia-handler": ("openshift", "cri-o")}
RUNTIME_GATE = ("RT001", "RT002", "RT003", "RT008", "RT009", "RT010")


@pytest.mark.parametrize("sample", sorted(DISTRO_EXPECTED))
def test_distro_serious_findings_are_exactly_the_diagnosis(sample: str) -> None:
    got = {f.id: f.severity.value for f in report(sample).findings if f.severity.rank >= 2}
    assert got == DISTRO_EXPECTED[sample]
    errors = [(r.rule_id, r.reason) for r in report(sample).rules if r.status.value == "error"]
    assert errors == []


@pytest.mark.parametrize("sample", sorted(DISTRO_ROOTS))
def test_distro_root_cause_on_the_failing_node_only(sample: str) -> None:
    root_id, under = DISTRO_ROOTS[sample]
    root = finding(sample, root_id)
    assert root.caused_by == [] and root.nodes == ["gpu-2"]
    for fid in under:
        assert root_id in ancestors(sample, fid), fid
    gate = sorted(f.id for f in report(sample).findings if f.rule_id in RUNTIME_GATE)
    assert gate == sorted({root_id} | {f for f in under if f.startswith(RUNTIME_GATE)})
    assert not [f.id for f in report(sample).findings
                if f.rule_id.startswith(("RT", "OP")) and "gpu-1" in f.nodes
                and f.rule_id != "RT007"]


@pytest.mark.parametrize("sample", sorted(DISTRO_OF))
def test_distro_nodes_are_read_from_runtime_json(sample: str) -> None:
    distribution, runtime = DISTRO_OF[sample]
    for node_name in ("gpu-1", "gpu-2"):
        where = facts(sample).node_runtime(node_name)
        assert (where.distribution, where.runtime, where.source) == (
            distribution, runtime, "runtime.json")


@pytest.mark.parametrize("sample", sorted(DISTRO_OF))
def test_distro_nodes_never_get_rt004(sample: str) -> None:
    """None of these nodes has a containerd unit (LoadState=not-found); RT004 judges the
    distribution's own unit where containerd is its child, and CRI-O not at all."""
    assert not [f.id for f in report(sample).findings if f.rule_id == "RT004"]
    status = next(r for r in report(sample).rules if r.rule_id == "RT004")
    if DISTRO_OF[sample][1] == "cri-o":
        assert status.status.value == "skipped"
    else:
        assert status.status.value == "passed"


def test_distro_k3s_toolkit_aimed_at_etc_containerd() -> None:
    rt008 = finding("k3s-toolkit-default-config", "RT008:gpu-2")
    assert ("the toolkit's default /etc/containerd/config.toml is in effect, but this node's "
            "containerd runs with /var/lib/rancher/k3s/agent/etc/containerd/config.toml"
            in rt008.summary)
    assert "socket" not in rt008.summary  # CONTAINERD_SOCKET names k3s's socket
    assert ("#   CONTAINERD_CONFIG=/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl"
            in rt008.remediation)


def test_distro_k0s_toolkit_aimed_at_config_and_socket() -> None:
    rt008 = finding("k0s-toolkit-default-paths", "RT008:gpu-2")
    assert "runs with /etc/k0s/containerd.toml" in rt008.summary
    assert "containerd listens on /run/k0s/containerd.sock" in rt008.summary
    assert "#   CONTAINERD_CONFIG=/etc/k0s/containerd.d/nvidia.toml" in rt008.remediation


def test_distro_rke2_template_parse_failure_is_quoted() -> None:
    rt009 = finding("rke2-template-go-directives", "RT009:gpu-2")
    assert "keys cannot contain { character" in rt009.summary
    assert any(e.path.endswith("config.toml.tmpl") and e.line == 1 and "{{" in e.excerpt
               for e in rt009.evidence)
    assert any(e.path.endswith("nvidia-container-toolkit-ctr.log") for e in rt009.evidence)


def test_distro_microk8s_generated_file_named() -> None:
    rt009 = finding("microk8s-toolkit-edits-generated-config", "RT009:gpu-2")
    assert ("the toolkit is told to edit /var/snap/microk8s/current/args/containerd.toml, "
            "which microk8s rebuilds from") in rt009.summary
    assert ("#   CONTAINERD_CONFIG=/var/snap/microk8s/current/args/containerd-template.toml"
            in rt009.remediation)


def test_distro_crio_refusal_and_hook() -> None:
    rt010 = finding("openshift-crio-no-nvidia-handler", "RT010:gpu-2")
    assert "handlers: crun, runc" in rt010.summary
    assert "oci-nvidia-hook.json" in rt010.summary
    assert any("failed to find runtime handler nvidia" in e.excerpt for e in rt010.evidence)


# --------------------------------------------- issue 15: a catalog-2 rule as the root
# Each sample of samples/scenarios_causes.py (real thread in its docstring): the root
# finding, exactly the findings it explains, and every serious finding of the sample.

# the driver container's crash loop, as Kubernetes records it (CMP007), under the root
_DRIVER_LOOP = "CMP007:gpu-operator/nvidia-driver-daemonset"
ROOTS: dict[str, tuple[str, list[str]]] = {
    "host-driver-under-container": ("OP012:gpu-2", [_DRIVER_LOOP, "OP001:gpu-2"]),
    "driver-build-no-headers": ("OP015:gpu-2", [_DRIVER_LOOP, "DRV003:gpu-2", "OP001:gpu-2"]),
    "vfio-bound-gpus": ("DRV010:gpu-2", ["DRV003:gpu-2", "OP001:gpu-2"]),
    "driver-too-old-for-gpu": ("DRV008:gpu-2", ["DRV003:gpu-2", "OP001:gpu-2"]),
    "mig-reconfigure-busy": ("OP014:gpu-2", ["OP009:gpu-2"]),
    "smi-no-devices": ("DRV009:gpu-2", ["BND001:nvidia-smi-failed", "OP001:gpu-2"]),
    "gpus-seen-unallocated": ("SC007:gpu-2", []),
    "crd-older-than-chart": ("OP016:clusterpolicies.nvidia.com", ["HELM002:gpu-operator"]),
}

# The driver stage failing on gpu-2 and what hangs under it.
_DRIVER_DOWN = {"DRV003:gpu-2": "critical", "OP001:gpu-2": "high", "OP008:gpu-2": "high",
                "OP006:cluster-policy": "high", "RT006:gpu-2": "high"}
CAUSE_SAMPLES: dict[str, dict[str, str]] = {
    "host-driver-under-container": {"OP012:gpu-2": "high", "OP001:gpu-2": "high",
                                    "OP006:cluster-policy": "high", _DRIVER_LOOP: "high"},
    # the second kernel is a finding of its own (DRV005: driver-container nodes drift)
    "driver-build-no-headers": {"OP015:gpu-2": "high", "DRV005:kernels/ubuntu24.04": "medium",
                                _DRIVER_LOOP: "high", **_DRIVER_DOWN},
    "vfio-bound-gpus": {"DRV010:gpu-2": "critical", **_DRIVER_DOWN},
    "driver-too-old-for-gpu": {"DRV008:gpu-2": "critical", **_DRIVER_DOWN},
    "mig-reconfigure-busy": {"OP014:gpu-2": "high", "OP009:gpu-2": "high"},
    # nothing explains nvidia-smi's failure: DRV009 stays high and is the root
    "smi-no-devices": {"DRV009:gpu-2": "high", "OP001:gpu-2": "high", "OP008:gpu-2": "high",
                       "OP006:cluster-policy": "high"},
    # SC003 names the same workload, per workload
    "gpus-seen-unallocated": {"SC007:gpu-2": "high",
                              "SC003:search/embedder-6b8f9d7c5d": "medium"},
    "crd-older-than-chart": {"OP016:clusterpolicies.nvidia.com": "high",
                             "HELM002:gpu-operator": "high"},
}


@pytest.mark.parametrize("sample", sorted(CAUSE_SAMPLES))
def test_cause_sample_serious_findings(sample: str) -> None:
    got = {f.id: f.severity.value for f in report(sample).findings if f.severity.rank >= 2}
    assert got == CAUSE_SAMPLES[sample]
    assert not [r.rule_id for r in report(sample).rules if r.status.value == "error"]


@pytest.mark.parametrize("sample", sorted(ROOTS))
def test_cause_sample_root_and_children(sample: str) -> None:
    root_id, children = ROOTS[sample]
    root = finding(sample, root_id)
    assert root.caused_by == []
    assert root.nodes == ([] if root_id.startswith("OP016") else ["gpu-2"])
    assert root.causes == children
    for child in children:
        assert root_id in finding(sample, child).caused_by, child
    # OP001 names the cause it hangs under instead of saying none was found
    if "OP001:gpu-2" in children:
        op001 = finding(sample, "OP001:gpu-2")
        assert "No rule identified" not in op001.summary
        assert f"(see {root_id.split(':')[0]})" in op001.summary
    # gpu-1 is healthy: no driver or operator finding names it (DRV005's fleet-wide
    # finding lists both kernels, gpu-1's included)
    assert not [f.id for f in report(sample).findings
                if f.rule_id.startswith(("OP", "DRV")) and "gpu-1" in f.nodes
                and f.id != "DRV005:kernels/ubuntu24.04"]


def test_cause_sample_evidence() -> None:
    op012 = finding("host-driver-under-container", "OP012:gpu-2")
    assert "535.230.02 is already loaded" in op012.summary
    assert any("driver is in use" in e.excerpt and e.path.endswith("nvidia-driver-ctr.log")
               for e in op012.evidence)
    op015 = finding("driver-build-no-headers", "OP015:gpu-2")
    assert "kernel 6.8.0-90-generic" in op015.summary
    assert "/lib/modules/6.8.0-90-generic/build: No such file" in op015.evidence[0].excerpt
    drv010 = finding("vfio-bound-gpus", "DRV010:gpu-2")
    assert "bound to vfio-pci" in drv010.summary
    assert [e.path for e in drv010.evidence][-1] == "nodes/gpu-2/host/modules.txt"
    drv008 = finding("driver-too-old-for-gpu", "DRV008:gpu-2")
    assert "AD102GL [L40S]" in drv008.summary and "470.256.02" in drv008.summary
    assert drv008.evidence[0].path == "nodes/gpu-2/dmesg.txt"
    op014 = finding("mig-reconfigure-busy", "OP014:gpu-2")
    assert "could not reset GPU 00000000:17:00.0, 00000000:31:00.0" in op014.summary
    assert "pod ml/finetune-llama-8b-0 (nvidia.com/gpu: 2)" in op014.summary
    assert op014.evidence[0].path.endswith("nvidia-mig-manager.log")
    drv009 = finding("smi-no-devices", "DRV009:gpu-2")
    assert "nvidia-smi failed (exit code 6)" in drv009.summary
    assert "nodes/gpu-2/dmesg.txt is empty" in drv009.summary
    assert "Ask next for the output of: kubectl debug node/gpu-2 -it --image=ubuntu" \
        in drv009.summary
    assert drv009.evidence[0].path == "manifest.json"
    sc007 = finding("gpus-seen-unallocated", "SC007:gpu-2")
    assert "sets NVIDIA_VISIBLE_DEVICES=all itself (every GPU)" in sc007.summary
    assert "allocated to ml/finetune-mistral-7b-0" in sc007.summary
    op016 = finding("crd-older-than-chart", "OP016:clusterpolicies.nvidia.com")
    assert 'unknown field "kernelModuleType"' in op016.summary
    assert op016.evidence[0].path == "cluster/helm/gpu-operator.json"


@pytest.mark.parametrize("sample", sorted(ROOTS))
def test_cause_rule_fires_on_no_other_sample(sample: str) -> None:
    rule = ROOTS[sample][0].split(":")[0]
    others = sorted(p.name for p in SAMPLES.iterdir()
                    if (p / "manifest.json").is_file() and p.name != sample)
    # helm-dropped-values also has OP012, there under HELM001 (the dropped value);
    # nouveau-loaded, vfio-bound-gpus and driver-too-old-for-gpu have DRV009 under DRV003
    allowed = {"OP012": {"helm-dropped-values"},
               "DRV009": {"nouveau-loaded", "vfio-bound-gpus", "driver-too-old-for-gpu"},
               }.get(rule, set())
    fired = [s for s in others if any(f.rule_id == rule for f in report(s).findings)]
    assert fired == sorted(allowed)
    for other in fired:  # there it is never a root
        assert all(f.caused_by for f in report(other).findings if f.rule_id == rule), other


def _all_samples() -> list[str]:
    return sorted(p.name for p in SAMPLES.iterdir() if (p / "manifest.json").is_file())


GENERIC_CMP = frozenset({"CMP003", "CMP004", "CMP005", "CMP006", "CMP007", "CMP008", "CMP009"})


def test_op001_names_its_cause_or_says_none_was_found() -> None:
    """Issue 15: on every sample, OP001 stands as a root only when no rule explains its
    stage, and then quotes the first error or names what to ask for next (issue 27); when
    it hangs under a cause it does neither. It never ends on "no rule identified"."""
    for sample in _all_samples():
        for f in report(sample).findings:
            if f.rule_id not in ("OP001", "DRV009"):
                continue
            assert "No rule identified" not in f.summary, (sample, f.id)
            if f.rule_id == "OP001":
                generic = any(words in f.summary for words in (
                    "No known cause explains", "Ask next", "The bundle does not say why",
                    "The node's kernel log records the kill"))
                # a pod's own Kubernetes record (CMP003-CMP009) is linked beside the
                # generic sentence; any other cause replaces it
                specific = [c for c in f.caused_by if c.split(":")[0] not in GENERIC_CMP]
                assert generic is (not specific), (sample, f.id)


def test_no_root_is_also_a_symptom() -> None:
    """Issue 15: on every sample, a finding listed as a root (or standalone) is nobody's
    symptom, and no finding is listed as a root twice."""
    for sample in _all_samples():
        view = build_view(report(sample))
        roots = [c.root.id for c in view.chains] + [f.id for f in view.standalone]
        symptoms = {s.id for c in view.chains for s in c.symptoms}
        assert len(roots) == len(set(roots)), sample
        assert not set(roots) & symptoms, sample


# ------------------------------------- issue 15: OP011 and DRV011 as roots of their own
# samples/scenarios_labels_fabric.py (real threads in its docstrings and README.md):
# nfd-not-labelling (gpu-operator#149: no NFD, the operator deploys nothing) and
# hgx-nvswitch-sxid (a fatal SXid with its Xid 74, Fabric Manager down after it).

LABEL_FABRIC_ROOTS: dict[str, tuple[str, list[str], list[str]]] = {
    # root, the findings it links directly, the nodes it names
    "nfd-not-labelling": ("OP011:node-feature-discovery", ["OP003:gpu-1", "OP003:gpu-2"],
                          ["gpu-1", "gpu-2"]),
    "hgx-nvswitch-sxid": ("DRV011:hgx-1/0000:05:00.0",
                          ["DRV001:hgx-1/0000:17:00.0", "OP005:hgx-1"], ["hgx-1"]),
}
LABEL_FABRIC_SAMPLES: dict[str, dict[str, str]] = {
    # nothing was deployed on either GPU node: every finding below OP011 says so
    "nfd-not-labelling": {
        "OP011:node-feature-discovery": "high",
        "OP003:gpu-1": "high", "OP003:gpu-2": "high",
        "RT001:gpu-1": "critical", "RT001:gpu-2": "critical",
        "OP008:gpu-1": "high", "OP008:gpu-2": "high",
        "RT006:gpu-1": "high", "RT006:gpu-2": "high",
        "RT007:handler/nvidia-cdi": "medium", "RT007:handler/nvidia-legacy": "medium"},
    # the plugin withdrew the GPU behind the Xid 74 (OP008, under DRV001)
    "hgx-nvswitch-sxid": {
        "DRV011:hgx-1/0000:05:00.0": "high", "DRV001:hgx-1/0000:17:00.0": "high",
        "OP005:hgx-1": "high", "OP008:hgx-1": "high"},
}


@pytest.mark.parametrize("sample", sorted(LABEL_FABRIC_SAMPLES))
def test_label_fabric_serious_findings(sample: str) -> None:
    got = {f.id: f.severity.value for f in report(sample).findings if f.severity.rank >= 2}
    assert got == LABEL_FABRIC_SAMPLES[sample]
    assert not [r.rule_id for r in report(sample).rules if r.status.value == "error"]


@pytest.mark.parametrize("sample", sorted(LABEL_FABRIC_ROOTS))
def test_label_fabric_root_and_children(sample: str) -> None:
    root_id, children, nodes = LABEL_FABRIC_ROOTS[sample]
    root = finding(sample, root_id)
    assert root.caused_by == []
    assert root.nodes == nodes
    assert root.causes == children
    for child in children:
        assert finding(sample, child).caused_by == [root_id], child
    # the whole chain is visible under the root: every other serious finding descends
    # from it
    for other in LABEL_FABRIC_SAMPLES[sample]:
        if other != root_id:
            assert root_id in ancestors(sample, other), other


def test_label_fabric_nfd_chain_per_node() -> None:
    for node in ("gpu-1", "gpu-2"):
        assert finding("nfd-not-labelling", f"OP003:{node}").causes == [
            f"OP008:{node}", f"RT001:{node}", f"RT006:{node}",
            "RT007:handler/nvidia-cdi", "RT007:handler/nvidia-legacy"]
    op011 = finding("nfd-not-labelling", "OP011:node-feature-discovery")
    assert "no NFD master or worker pod exists in the cluster" in op011.summary
    operator = [e for e in op011.evidence if e.path.endswith("/gpu-operator.log")]
    # the operator's last reconcile before collection
    assert len(operator) == 1 and "No NFD label found, polling for new nodes." in \
        operator[0].excerpt
    assert any(e.path == "cluster/clusterpolicies.json"
               and "NFDLabelsMissing: No NFD labels found" in e.excerpt
               for e in op011.evidence)
    assert "helm upgrade --reuse-values --set nfd.enabled=true" in op011.remediation
    op003 = finding("nfd-not-labelling", "OP003:gpu-1")
    assert op003.caused_by == ["OP011:node-feature-discovery"]


def test_label_fabric_sxid_evidence_and_healthy_twin() -> None:
    sample = "hgx-nvswitch-sxid"
    drv011 = finding(sample, "DRV011:hgx-1/0000:05:00.0")
    assert "SXid 20034 (LTSSM Fault Up, fatal) x1" in drv011.summary
    assert "The GPUs report it too: 0000:17:00.0" in drv011.summary
    assert [(e.path, e.line) for e in drv011.evidence] == [("nodes/hgx-1/dmesg.txt", 29)]
    assert "20034, Fatal, Link 30 LTSSM Fault Up" in drv011.evidence[0].excerpt
    assert "kubectl cordon hgx-1" in drv011.remediation
    op005 = finding(sample, "OP005:hgx-1")
    assert [(e.path, e.line) for e in op005.evidence] == [
        ("nodes/hgx-1/journal/nvidia-fabricmanager.jsonl", 3)]
    xid = finding(sample, "DRV001:hgx-1/0000:17:00.0")
    assert "Xid 74 (Fatal NVLink error) x1" in xid.summary
    assert xid.causes == ["OP008:hgx-1"]
    # hgx-2 is the healthy twin: no driver, operator or runtime finding names it
    assert not [f.id for f in report(sample).findings if "hgx-2" in f.nodes
                and f.rule_id.startswith(("OP", "DRV", "RT", "SC"))]


@pytest.mark.parametrize("rule, sample", [("OP011", "nfd-not-labelling"),
                                          ("DRV011", "hgx-nvswitch-sxid")])
def test_label_fabric_rule_fires_on_no_other_sample(rule: str, sample: str) -> None:
    fired = [s for s in _all_samples()
             if any(f.rule_id == rule for f in report(s).findings)]
    assert fired == [sample]
