"""OP006, OP007, OP010: the ClusterPolicy, driver upgrades and the driver's kernel."""

from __future__ import annotations

from datetime import UTC, datetime

from analyzers.rule import Context, Input
from bundle import specs
from bundle.kube import Node

POLICIES = specs.CLUSTERPOLICIES


# What the collector's failed read of the ClusterPolicy list says when the CRD itself is
# missing: the list stands for itself (OP006 reports the missing CRD, not a skip).
MISSING_CRD = (r"doesn.t have a resource type|no matches for kind|"
               r"could not find the requested resource")
POLICY_LIST = Input(POLICIES, error=MISSING_CRD)


_NODE_REASONS = {"OperandNotReady", "DriverNotReady", "ReconcileFailed",
                 "NodeStatusExporterNotReady"}


_NFD_REASONS = {"NFDLabelsMissing", "NoGPUNodes"}


UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"


INITIAL_UNSCHEDULABLE = "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"


FAILED = "upgrade-failed"


DONE = "upgrade-done"


MIDDLE = frozenset({
    "cordon-required", "wait-for-jobs-required", "pod-deletion-required", "drain-required",
    "node-maintenance-required", "post-maintenance-required", "pod-restart-required",
    "validation-required", "uncordon-required",
})


START_ANNOTATIONS = (
    "nvidia.com/gpu-driver-upgrade-wait-for-pod-completion-start-time",
    "nvidia.com/gpu-driver-upgrade-validation-start-time",
)


STUCK_AFTER_S = 3600


def _age(obj: Node, created_at: str | None) -> float | None:
    """Seconds since the upgrade step started (from its annotations), at collection."""
    if not created_at:
        return None
    try:
        now = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    starts = []
    for key in START_ANNOTATIONS:
        value = obj.metadata.annotations.get(key, "")
        if value.isdigit():
            starts.append(datetime.fromtimestamp(int(value), tz=UTC))
    if not starts:
        return None
    return (now - max(starts)).total_seconds()


# What to look at next for the error the driver container's log names.
_BUILD_NEXT = {
    "signing": "# the kernel enforces module signatures: check 'mokutil --sb-state' and the "
               "kernel command line (lockdown=, module.sig_enforce=1) on the node; sign the "
               "module or use a signed precompiled driver image",
    "dkms": "# read the DKMS error in the driver container's log (and its make.log); the "
            "kernel is not shown to be the problem",
    "compiler": "# the container's compiler differs from the kernel's ('cat /proc/version' on "
                "the node): use a driver image for this OS release",
    "kernel": "# the build needs headers for the running kernel: check the repository access "
              "(driver.repoConfig, proxy) or use a precompiled image that exists for this "
              "kernel",
    "other": "# fix the error the driver container's log names (quoted above)",
    "generic": "# read the lines before the installer's message: 'Kernel module load error' and "
               "'Kernel messages' name the reason",
}


def _signing_without_secure_boot(ctx: Context, name: str) -> str:
    """OP010's sentence for a signature refusal that DRV004 (Secure Boot) does not own."""
    enabled, line = ctx.facts.secure_boot(name)
    if line is not None and not enabled:
        return ("Secure Boot is off, so the kernel enforces module signatures by itself "
                "(lockdown= or module.sig_enforce=1 on its command line): the module needs "
                "a signature the kernel trusts; the kernel version is not the problem.")
    return ("The module needs a signature the kernel trusts; the kernel version is not the "
            "problem.")
