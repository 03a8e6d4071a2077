"""OP014: A MIG change is blocked by processes holding the GPU."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS_REQUIRED, node_ref
from analyzers.rules.op._migbusy import PROCESSES_FILE, _Blocked, _holders, _log_hits, _remediation
from bundle import specs


class MigChangeBlocked(Rule):
    """A MIG change is blocked by processes holding the GPU.

    Per node, the MIG manager's log says the GPU reset that a MIG mode change needs was
    refused — ``The following GPUs could not be reset:`` / ``GPU <bdf>: In use by
    another client`` (nvidia-mig-parted), or ``MIG mode is in pending enable|disable
    state for GPU <bdf>:In use by another client`` (nvidia-smi). The finding names what
    holds the GPU as far as the bundle shows: host processes from
    ``host/gpu-processes.txt`` (``nvidia-persistenced``, ``nv-hostengine``,
    ``nv-fabricmanager``, DCGM), the ``nvidia_drm`` module from ``host/modules.txt``,
    Running DCGM operand pods and Running pods that request GPUs on the node. It causes
    OP009's MIG finding on the node.

    Why it matters:
    The MIG layout the node was asked for never applies: the node keeps its old layout
    (or none), ``nvidia.com/mig.config.state`` stays pending or turns failed, and pods
    asking for the new MIG profiles stay Pending.

    Remediation:
    Stop what holds the GPU, then let the MIG manager retry (relabel
    ``nvidia.com/mig.config``): drain GPU pods from the node, let the operator stop
    DCGM (or scale it down), stop ``nvidia-persistenced`` or turn persistence mode off
    (``nvidia-smi -pm 0``) on host-driver nodes, unload ``nvidia_drm`` if nothing
    needs it; a reboot clears everything.
    """

    id = "OP014"
    slug = "mig-change-blocked"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (
        LOGS_REQUIRED,
        node(PROCESSES_FILE, optional=True),
        node(specs.MODULES, optional=True),
        cluster(specs.PODS, optional=True),
    )
    needs = (Need.OPERATOR,)
    tags = ("operator", "mig")

    def check(self, ctx: Context) -> Iterable[Finding]:
        names = sorted(set(ctx.facts.node_names) | ctx.facts.gpu_node_set)
        for name in names:
            blocked = _Blocked()
            _log_hits(ctx, name, blocked)
            if not blocked.hits:
                continue
            _holders(ctx, name, blocked)
            yield self._finding(ctx, name, blocked)

    def _finding(self, ctx: Context, name: str, blocked: _Blocked) -> Finding:
        gpus = f"GPU {', '.join(sorted(blocked.gpus))}" if blocked.gpus else "the GPU"
        summary = (f"On {name}, the MIG manager could not reset {gpus} to change the MIG "
                   "mode: in use by another client.")
        if blocked.holders:
            summary += " Holding the GPU: " + "; ".join(blocked.holders) + "."
        else:
            summary += (" The bundle names no holder (no host GPU process, no nvidia_drm, "
                        "no GPU pod running): look at nvidia-smi's process list on the node.")
        return self.finding(name, summary, nodes=[name],
                            objects=[node_ref(name), *blocked.objects],
                            evidence=[*blocked.hits, *blocked.evidence],
                            causes=[refs.link("OP009", name)],
                            remediation=_remediation(ctx, name, blocked))
