"""RT006: CDI is enabled but a GPU node has no NVIDIA CDI spec, or a stale one."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers.facts.evidence import field
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import CannotJudge, Context, Rule, cluster, node
from analyzers.rules.common import LOGS, RUNTIME_FILES, node_ref
from analyzers.rules.rt._refs import (
    _cause_link,
    _cdi_collected,
    _cdi_remediation,
    _ItemsByPath,
)
from bundle import specs


class CdiSpecMissing(Rule):
    """CDI is enabled but a GPU node has no NVIDIA CDI spec, or a stale one.

    With ``cdi.enabled`` (the default since GPU Operator 25.10) devices are injected
    by name from specs under ``/var/run/cdi`` or ``/etc/cdi``. A node without an
    NVIDIA spec, or with a spec generated for another driver version, cannot
    resolve the device names the plugin hands out.

    Why it matters:
    Containers fail at creation with ``unresolvable CDI devices`` or get libraries
    of a driver that is no longer installed, while the node still advertises GPUs.

    Remediation:
    On the node: ``ls -l /var/run/cdi /etc/cdi``; check that the toolkit pod is
    running there (it writes the management spec) or regenerate a host spec with
    ``nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml`` after a driver change.
    """

    id = "RT006"
    slug = "cdi-spec-missing"
    severity = Severity.HIGH
    confidence = Confidence.LIKELY
    inputs = (cluster(specs.CLUSTERPOLICIES), node(specs.NVIDIA_SMI, optional=True),
              node(specs.CDI_ANY, optional=True), cluster(specs.HELM_RELEASES, optional=True),
              cluster(specs.PODS, optional=True), *RUNTIME_FILES, LOGS)
    tags = ("runtime", "cdi")

    def check(self, ctx: Context) -> Iterable[Finding]:
        policy = ctx.facts.cluster_policy
        cdi = policy.spec.get("cdi") if policy is not None else None
        if policy is None or not isinstance(cdi, dict) or cdi.get("enabled") is not True:
            return
        items = _ItemsByPath(ctx.facts.manifest.items)
        judged = [n for n in ctx.facts.gpu_nodes
                  if n in ctx.facts.node_dirs and _cdi_collected(ctx, items, n)]
        if not judged:
            raise CannotJudge("no GPU node had its CDI directories (cdi/) collected")
        for node_name in judged:
            artifacts = ctx.facts.node(node_name)
            nvidia_specs = {p: t for p, t in artifacts.cdi_files.items() if "nvidia" in p.lower()}
            policy_evidence = field(policy, "spec.cdi.enabled: true", "spec", "cdi", "enabled")
            if not nvidia_specs:
                cdi_dir = specs.node_file(node_name, specs.CDI_DIR)
                gap = next((i for i in items.under(cdi_dir.rstrip("/")) if i.error), None)
                excerpt = (f"{gap.path}: {gap.error}" if gap is not None
                           else "(no file with 'nvidia' in its name under cdi/)")
                yield self.finding(
                    node_name,
                    f"On {node_name}, CDI is enabled in ClusterPolicy {policy.metadata.name} but "
                    "no NVIDIA CDI spec exists under /etc/cdi or /var/run/cdi.",
                    nodes=[node_name], objects=[node_ref(node_name)],
                    evidence=[policy_evidence,
                              Evidence(path=artifacts.path(specs.CDI_DIR), excerpt=excerpt)],
                    caused_by=_cause_link(ctx, node_name),
                    remediation=_cdi_remediation(node_name))
                continue
            smi = artifacts.nvidia_smi
            driver = smi.driver_version if smi is not None else None
            for path in sorted(nvidia_specs):
                versions = artifacts.cdi_drivers.get(path, set())
                if driver and versions and driver not in versions:
                    found = ", ".join(sorted(versions))
                    yield self.finding(
                        node_name,
                        f"On {node_name}, the CDI spec cdi/{path} was generated for driver "
                        f"{found}, but the node runs {driver}.",
                        severity=Severity.HIGH, nodes=[node_name], objects=[node_ref(node_name)],
                        evidence=[Evidence(path=artifacts.path(specs.CDI_DIR + path),
                                           excerpt=f"libraries of driver {found}"),
                                  Evidence(path=artifacts.path(specs.NVIDIA_SMI),
                                           excerpt=f"driver_version {driver}")],
                        remediation=_cdi_remediation(node_name))
                    break
