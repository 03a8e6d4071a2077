"""OP012: the host's own driver and the operator's driver setting disagree: the links and
remediation of its finding (the verdict is analyzers/facts/driver.py's)."""

from __future__ import annotations

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts import driver
from analyzers.facts.driver import DEPLOY_LABEL
from analyzers.facts.evidence import field as object_field
from analyzers.refs import Link
from analyzers.results.models import Evidence
from analyzers.rule import Context
from analyzers.rules.common import flatten
from bundle.kube import ClusterPolicy


def _dropped_by_helm(ctx: Context) -> list[Link]:
    """HELM001's findings for a latest upgrade that dropped ``driver.enabled: false``:
    that is how the container came back over a host driver."""
    found = []
    for release, revisions in sorted(ctx.facts.helm_releases.items()):
        if len(revisions) < 2:
            continue
        before, after = revisions[-2], revisions[-1]
        if (flatten(before.values).get("driver.enabled") in (False, "false")
                and "driver.enabled" not in flatten(after.values)):
            found.append(refs.link("HELM001", release, after.revision))
    return found


def _enabled_evidence(policy: ClusterPolicy) -> Evidence:
    enabled = policy.component_enabled("driver")
    shown = "unset (defaults to true)" if enabled is None else str(enabled).lower()
    return object_field(policy, f"{policy.metadata.name}: spec.driver.enabled = {shown}",
                        "spec", "driver", "enabled")


def _causes(ctx: Context, name: str) -> list[Link]:
    causes = []
    stages = ctx.facts.operand_stages.get(name)
    if stages is not None and stages.first is not None:
        causes.append(refs.link("OP001", name))
    if driver.unusable(ctx.facts, name) is not None:
        causes.append(refs.link("DRV003", name))
    return causes


def _remediation(name: str, *, fight: bool) -> str:
    node_arg = sh.node(name)
    lines = [
        "kubectl get clusterpolicies.nvidia.com -o jsonpath='{.items[*].spec.driver}'; echo",
        sh.cmd("kubectl", "get", "node", node_arg, "-L", DEPLOY_LABEL),
        sh.node_shell(node_arg),
        "cat /proc/driver/nvidia/version; lsmod | grep -E '^nvidia'",
        "dpkg -l | grep -iE 'nvidia-(driver|dkms|kernel)' || rpm -qa | grep -i nvidia",
    ]
    if fight:
        lines += [
            "# keep the host driver: set driver.enabled=false (helm upgrade ... --set "
            "driver.enabled=false)",
            "# or let the operator own it: remove the host driver packages, reboot the node",
        ]
    else:
        lines.append("# install the driver on the host, or set driver.enabled=true so the "
                     "operator's driver container provides it")
    return sh.lines(lines)
