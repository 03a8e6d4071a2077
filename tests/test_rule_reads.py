"""Every rule declares what it reads.

A rule's ``inputs`` decide whether the engine runs it, and whether a bundle without (or
with a damaged copy of) a file makes it ``skipped`` or ``partial`` instead of
``passed`` (analyzers/engine/coverage.py); BND001 names the rules a failed collection step
left without input from them. A rule that reads a file it does not declare is judged
as if that file did not matter to it.

Each rule runs alone on a freshly opened copy of every sample, and the files it
touches are recorded: every raw read (``Bundle.read_bytes``), and every access to a
parsed cluster list or node file, which are kept after their first read
(``bundle.cluster.pods``, ``node.nvidia_smi``). A file counts as declared when one of
the rule's inputs matches it (``cluster/nodes.json`` too for a rule with per-node
inputs, as in analyzers/engine/coverage.py). Not counted:

- what the facts every rule may consult read: which nodes are GPU nodes, whether,
  where and which GPU Operator runs, and each node's CRI (the Facts properties in
  ``AMBIENT``; the preconditions of ``Rule.needs``);
- what a verdict of the facts reads when this rule asks it and another rule reports it
  (``SHARED_JUDGEMENTS``): that rule declares it, and says whether it ran.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from kit.bundles import kube_list, kube_node, write_dir

from analyzers.engine import run_rule
from analyzers.engine.coverage import required_inputs
from analyzers.engine.plugins import LoadedRule, discover
from analyzers.facts import Facts
from analyzers.facts.logindex import node_logs
from analyzers.results.models import Finding, Severity
from analyzers.rule import Context, Input, Rule, cluster
from analyzers.rules.common import LOGS
from bundle import open_bundle
from bundle.reader import Bundle, ClusterObjects, NodeArtifacts

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(p for p in (ROOT / "samples").iterdir() if (p / "manifest.json").is_file())

# Facts every rule may consult without declaring their files: GPU nodes, the operator,
# each node's CRI and the preconditions the engine checks before a rule runs (``unmet``).
AMBIENT = frozenset({"nodes", "gpu_nodes", "gpu_node_set", "node_dirs", "operator_namespace",
                     "operator_version", "operator_pods", "operator_signs",
                     "operator_expected", "node_cris", "unmet"})
FACTS_FILE = str(Path("analyzers", "facts", "__init__.py"))
# Judgements kept by the facts (function, file) -> the rule that reports them and so
# declares what they read; another rule that asks them does not.
DRIVER_FILE = str(Path("analyzers", "facts", "driver.py"))
SHARED_JUDGEMENTS = {
    ("judge_refusal", str(Path("analyzers", "facts", "secureboot.py"))): "DRV004",
    ("judge_unusable", DRIVER_FILE): "DRV003",
    ("judge_gpu_refusal", DRIVER_FILE): "DRV008",
    ("judge_foreign_binding", DRIVER_FILE): "DRV010",
    ("judge_host_conflict", DRIVER_FILE): "OP012",
    ("judge_build_failure", DRIVER_FILE): "OP015",
}
# Parsed views that are kept after their first read → the file they stand for.
CLUSTER_VIEWS = {
    "nodes": "cluster/nodes.json", "pods": "cluster/pods.json",
    "events": "cluster/events.json", "daemonsets": "cluster/daemonsets.json",
    "deployments": "cluster/deployments.json",
    "runtimeclasses": "cluster/runtimeclasses.json",
    "resourcequotas": "cluster/resourcequotas.json",
    "configmaps": "cluster/configmaps.json",
    "clusterpolicies": "cluster/clusterpolicies.json",
    "nvidiadrivers": "cluster/nvidiadrivers.json", "helm": "cluster/helm/*.json",
    "crds": "cluster/crds.json", "version": "cluster/version.json",
}
NODE_VIEWS = {
    "config_dump_text": "containerd/config-dump.toml",
    "config_dump": "containerd/config-dump.toml",
    "containerd_version": "containerd/version.txt",
    "containerd_files": "containerd/files/*", "containerd_refused": "containerd/files/*",
    "dmesg": "dmesg.txt", "systemd_containerd": "systemd/containerd.txt",
    "nvidia_smi": "nvidia-smi.xml", "cdi_files": "cdi/*",
}


class Recorder:
    """The files the rule under test touches, as ("cluster" | "node", path)."""

    def __init__(self) -> None:
        self.rule: type[Rule] | None = None
        self.touched: set[tuple[str, str]] = set()

    def note(self, path: str) -> None:
        parts = path.split("/", 2)
        if parts[0] == "nodes" and len(parts) == 3:
            self.touch("node", parts[2])
        else:
            self.touch("cluster", path)

    def touch(self, where: str, path: str) -> None:
        rule = self.rule
        if rule is not None and not _on_behalf_of_another(sys._getframe(2), rule):
            self.touched.add((where, path))


def _on_behalf_of_another(frame: FrameType | None, rule: type[Rule]) -> bool:
    """Whether the access happens inside an ambient fact or another rule's judgement."""
    while frame is not None:
        code = frame.f_code
        if code.co_name in AMBIENT and code.co_filename.endswith(FACTS_FILE):
            return True
        owner = next((owner for (name, path), owner in SHARED_JUDGEMENTS.items()
                      if code.co_name == name and code.co_filename.endswith(path)), None)
        if owner not in (None, rule.id):
            return True
        frame = frame.f_back
    return False


@contextmanager
def recording() -> Iterator[Recorder]:
    """Record, while open, what the rule set as ``Recorder.rule`` touches."""
    found = Recorder()
    read_bytes = Bundle.read_bytes

    def reading(self: Bundle, path: str) -> bytes | None:
        found.note(path)
        return read_bytes(self, path)

    def cluster_view(self: ClusterObjects, name: str) -> Any:
        if name in CLUSTER_VIEWS:
            found.touch("cluster", CLUSTER_VIEWS[name])
        return object.__getattribute__(self, name)

    def node_view(self: NodeArtifacts, name: str) -> Any:
        if name in NODE_VIEWS:
            found.touch("node", NODE_VIEWS[name])
        return object.__getattribute__(self, name)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Bundle, "read_bytes", reading)
        patch.setattr(ClusterObjects, "__getattribute__", cluster_view, raising=False)
        patch.setattr(NodeArtifacts, "__getattribute__", node_view, raising=False)
        yield found


@pytest.fixture()
def recorder() -> Iterator[Recorder]:
    with recording() as found:
        yield found


def declared(rule: type[Rule], where: str, path: str) -> bool:
    inputs: list[Input] = [*rule.inputs, *required_inputs(rule)]
    return any(needed.per_node == (where == "node") and fnmatch.fnmatchcase(path, needed.path)
               for needed in inputs)


def undeclared(recorder: Recorder, bundle_dir: Path,
               rules: list[LoadedRule]) -> dict[str, list[str]]:
    """Rule id → the files it read without declaring them, on this bundle."""
    missing: dict[str, list[str]] = {}
    for loaded in rules:
        with open_bundle(bundle_dir) as bundle:
            ctx = Context(bundle, Facts(bundle), [r.rule for r in rules])
            recorder.touched.clear()
            recorder.rule = loaded.rule
            try:
                run_rule(loaded.rule, loaded.origin, ctx)
            finally:
                recorder.rule = None
        shown = sorted({_shown(where, path) for where, path in recorder.touched
                        if not declared(loaded.rule, where, path)})
        if shown:
            missing[loaded.rule.id] = shown
    return missing


def _shown(where: str, path: str) -> str:
    if where == "node":
        return f"nodes/*/{path}"
    return "logs/*" if path.startswith("logs/") else path


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_rule_declares_what_it_reads(sample: Path, recorder: Recorder) -> None:
    assert undeclared(recorder, sample, discover().rules) == {}


# -- the recorder itself ---------------------------------------------------------------


class _ReadsLogs(Rule):
    """Test rule: reads container logs and the nodes list.

    Why it matters:
    Test.

    Remediation:
    Test.
    """

    id = "TST901"
    slug = "reads-logs"
    severity = Severity.LOW
    inputs: tuple[Input, ...] = (cluster("pods.json"),)

    def check(self, ctx: Context) -> Iterator[Finding]:
        for name in ctx.bundle.node_names:
            list(node_logs(ctx.facts, name))
        if ctx.bundle.cluster.events:
            pass
        yield from ()


class _DeclaresLogs(_ReadsLogs):
    id = "TST902"
    inputs = (cluster("pods.json"), cluster("events.json", optional=True), LOGS)


def _bundle(tmp_path: Path) -> Path:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"nodeName": "gpu-a", "containers": [{"name": "c", "image": "i"}]}}
    return write_dir(tmp_path / "b", {
        "cluster/nodes.json": kube_list(kube_node("gpu-a", 1)),
        "cluster/pods.json": kube_list(pod),
        "cluster/events.json": kube_list(),
        "logs/ns/p/c.log": "2026-11-29T13:00:00.000000000Z hello\n",
        "nodes/gpu-a/dmesg.txt": "[    1.000000] Linux version 6.8.0\n",
    })


def test_the_recorder_names_what_a_rule_reads_undeclared(tmp_path: Path,
                                                         recorder: Recorder) -> None:
    rules = [LoadedRule(_ReadsLogs, "test"), LoadedRule(_DeclaresLogs, "test")]
    assert undeclared(recorder, _bundle(tmp_path), rules) == {
        "TST901": ["cluster/events.json", "logs/*"]}
