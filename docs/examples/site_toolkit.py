"""A local rule for one site, loaded with ``--rules docs/examples`` (no packaging).

The worked example of docs/writing-rules.md: its cases are in site_toolkit.cases.toml,
run with ``gpu-triage rules test docs/examples``.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzers.facts.evidence import field
from analyzers.results.models import Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster


class ToolkitManagedByOperator(Rule):
    """Site policy: the GPU Operator must manage the NVIDIA Container Toolkit.

    This site installs GPU hosts from a plain OS image: nothing but the operator's
    toolkit DaemonSet configures containerd for GPUs, so the ClusterPolicy must not
    turn the toolkit off.

    Why it matters:
    With ``toolkit.enabled=false`` no node gets the ``nvidia`` runtime, and every pod
    that asks for it fails at sandbox creation.

    Remediation:
    Re-enable the toolkit through Helm, then watch the toolkit pods come up:
      helm upgrade gpu-operator nvidia/gpu-operator -n gpu-operator --reuse-values \
        --set toolkit.enabled=true
      kubectl -n gpu-operator get pods -l app=nvidia-container-toolkit-daemonset -o wide
    """

    id = "SITE001"
    slug = "site-toolkit-managed"
    severity = Severity.HIGH
    inputs = (cluster("clusterpolicies.json"),)
    tags = ("site",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        policy = ctx.facts.cluster_policy
        if policy is None or policy.component_enabled("toolkit") is not False:
            return
        name = policy.metadata.name
        yield self.finding(
            name,
            f"ClusterPolicy {name} sets spec.toolkit.enabled=false; this site requires the "
            "operator to manage the Container Toolkit.",
            objects=[ObjectRef(kind="ClusterPolicy", name=name)],
            evidence=[field(policy, "spec.toolkit.enabled: false", "spec", "toolkit",
                            "enabled")],
        )


RULES = [ToolkitManagedByOperator]
