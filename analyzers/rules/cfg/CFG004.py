"""CFG004: The Container Toolkit is disabled while containerd has no nvidia runtime."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import field
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.cfg._base import operator_release
from analyzers.rules.common import RUNTIME_FILES, names, node_ref
from bundle import specs
from bundle.evidence import Locator, at_pointer, first_line


class ToolkitDisabledHostNotConfigured(Rule):
    """The Container Toolkit is disabled while containerd has no nvidia runtime.

    "Binary present is not configured": the ClusterPolicy sets ``toolkit.enabled:
    false`` (often because ``nvidia-ctk`` is installed on the hosts), but the loaded
    containerd configuration of GPU nodes has no ``nvidia`` runtime. A host binary
    configures nothing by being there; with the toolkit operand disabled nobody
    writes the runtime into containerd.

    Why it matters:
    The operator's own pods use ``runtimeClassName: nvidia``; with no handler their
    sandboxes fail, the device plugin never starts and no GPU is advertised, while
    ``nvidia-smi`` on the host still works and misleads the diagnosis.

    Remediation:
    Enable the toolkit through Helm, keeping every value set before:
      helm upgrade gpu-operator nvidia/gpu-operator -n gpu-operator \\
        --reuse-values --set toolkit.enabled=true
    ``--reuse-values`` matters: without it the chart defaults return, and a host-driver
    setup loses ``driver.enabled=false`` — the operator would then try to install a
    driver over the host one.
    """

    id = "CFG004"
    slug = "toolkit-disabled-host-not-configured"
    subject = refs.POLICY
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (
        cluster(specs.CLUSTERPOLICIES),
        node(specs.CONTAINERD_DUMP),
        cluster(specs.HELM_RELEASES, optional=True),
        node(specs.NVIDIA_CTK, optional=True),
        *RUNTIME_FILES,
    )
    tags = ("runtime", "configuration")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        policy = facts.cluster_policy
        if policy is None or policy.component_enabled("toolkit") is not False:
            return
        affected = [n for n in facts.gpu_nodes if facts.runtime(n).has_nvidia is False]
        if not affected:
            return
        evidence: list[Evidence | Locator] = [
            field(policy, "spec.toolkit.enabled: false", "spec", "toolkit", "enabled")]
        with_ctk = []
        for node_name in affected:
            artifacts = ctx.facts.node(node_name)
            text = artifacts.text(specs.NVIDIA_CTK) or ""
            hit = first_line(artifacts.path(specs.NVIDIA_CTK), text, "nvidia-ctk")
            if hit is not None:
                with_ctk.append(node_name)
                if len(with_ctk) <= 2:
                    evidence.append(Evidence(path=hit.path, line=hit.line, excerpt=hit.excerpt))
        for node_name in affected[:2]:
            evidence.append(Evidence(path=facts.runtime(node_name).dump_path,
                                     excerpt="(no runtimes.nvidia table in the loaded config)"))
        release = operator_release(ctx)
        helm_cmd: list[sh.Arg] = ["helm", "upgrade", "gpu-operator", "nvidia/gpu-operator"]
        namespace = sh.namespace(facts.operator_namespace or "gpu-operator")
        release_name: str | sh.Value = "gpu-operator"
        if release is not None:
            name, revisions = release
            latest = revisions[-1]
            release_name = sh.release(name)
            helm_cmd = ["helm", "upgrade", release_name, "nvidia/gpu-operator"]
            chart_version = latest.chart.removeprefix("gpu-operator-")
            if chart_version:
                helm_cmd += ["--version", sh.version(chart_version)]
            if latest.value("toolkit.enabled") is False:
                evidence.append(at_pointer(latest.source_path, latest.source_pointer,
                                           "toolkit.enabled: false (revision "
                                           f"{latest.revision}, {latest.status})",
                                           "values", "toolkit", "enabled"))
        ctk = (f" nvidia-ctk is installed on {names(with_ctk)}, but a binary on the host "
               "configures nothing." if with_ctk else "")
        summary = (f"ClusterPolicy {policy.metadata.name} sets toolkit.enabled=false, so the "
                   f"operator deploys no Container Toolkit, and containerd on "
                   f"{names(affected)} has no nvidia runtime.{ctk} Operand pods that need "
                   "the handler cannot start there.")
        remediation = sh.lines(
            "# look first: what the release sets today",
            sh.cmd("helm", "-n", namespace, "get", "values", release_name),
            "kubectl get clusterpolicy -o jsonpath='{.items[*].spec.toolkit.enabled}'",
            "# enable the toolkit, keeping every value set before (driver.enabled=false!)",
            sh.cmd(*helm_cmd, "-n", namespace, "--reuse-values", "--set", "toolkit.enabled=true"),
            "# watch it roll out, then confirm on each node",
            sh.cmd("kubectl", "-n", namespace, "get", "pods", "-o", "wide",
                   "-l", "app=nvidia-container-toolkit-daemonset"),
            "containerd config dump | grep -c 'runtimes.nvidia'   # > 0 on every GPU node",
            "# Without --reuse-values the chart defaults return: driver.enabled=false is lost",
            "# and the operator would try to install a driver over the host driver.",
        )
        objects = [ObjectRef(kind="ClusterPolicy", name=policy.metadata.name)]
        objects += [node_ref(n) for n in affected]
        yield self.finding(policy.metadata.name, summary, nodes=affected, objects=objects,
                           evidence=evidence, remediation=remediation)
