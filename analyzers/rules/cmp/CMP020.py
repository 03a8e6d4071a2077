"""CMP020: The driver container fails at a build or install step no other rule names."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.driverkernel import DRIVER_CONTAINER
from analyzers.facts.driverstep import DriverStep, StepKind
from analyzers.facts.next_step import logs_command
from analyzers.facts.preconditions import Need
from analyzers.models import Confidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS_REQUIRED, node_ref, unnamed_driver_step

# What to read or check next, per kind of failing step (read-only).
_NEXT: dict[StepKind, str] = {
    StepKind.PRECOMPILED: "# no precompiled package for this kernel: compare the kernel with "
                          "the published precompiled images, or build on the node "
                          "(driver.usePrecompiled=false)",
    StepKind.FETCH: "# the container cannot reach its package mirrors: check the node's "
                    "proxy, DNS and firewall, or give it a mirror (driver.repoConfig)",
    StepKind.HEADERS: "# no headers for the running kernel in the repositories it reaches: "
                      "a kernel newer than the mirror, or a custom kernel",
    StepKind.COMPILER: "# the module does not compile for this kernel: compare the driver "
                       "release with the kernel (a newer kernel may need a newer driver) "
                       "and the kernel's compiler (cat /proc/version) with the container's",
    StepKind.MODULE_LOAD: "# built but not loaded: read the kernel's words for it "
                          "(dmesg | grep -i nvrm) on the node",
    StepKind.MODULE_UNLOAD: "# a driver is already loaded: see what holds it on the node "
                            "(lsmod | grep nvidia; a host driver, a GPU process)",
    StepKind.OTHER: "# read the lines before the error: the step it belongs to says what "
                    "the container was doing",
}


class DriverStepFails(Rule):
    """The driver container fails at a build or install step no other rule names.

    The operator's driver pod on a GPU node is not healthy, and its ``nvidia-driver-ctr``
    log (the previous instance's first) shows an error — the first error line, harmless
    wordings skipped — and no known signature names an error of those logs (OP010's image
    and build errors, OP012's driver in use, OP015's headers and SELinux, DRV004's Secure
    Boot …), nor is its image refused. The finding quotes that line with its file and line
    number, and the step it belongs to (the ``set -x`` command or the progress line before
    it, such as ``Compiling NVIDIA driver kernel modules...``), and says what kind of step
    failed: no precompiled package for the kernel, package repositories unreachable, no
    kernel headers, the module not compiling (a compiler error or a compiler other than the
    kernel's), the module not loading, a loaded driver that cannot be unloaded, or another
    step. It causes OP001's driver stage on the node and DRV003's "driver not usable" there.

    Why it matters:
    Without the driver every operand on the node waits in Init and the node offers no
    GPU. The driver container says why in its own words; the first of them is where to
    start, even when no rule knows the wording yet.

    Remediation:
    Read the driver container's log around the quoted line (``kubectl -n gpu-operator
    logs <driver pod> -c nvidia-driver-ctr --previous``), compare the node's kernel with
    the driver version, and fix the failing step on one node first.
    """

    id = "CMP020"
    slug = "driver-step-fails"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (LOGS_REQUIRED, cluster("pods.json"), cluster("events.json", optional=True),
              cluster("clusterpolicies.json", optional=True),
              node("host/uname.txt", optional=True), node("host/secureboot.txt", optional=True))
    needs = (Need.OPERATOR,)
    tags = ("operator", "driver", "first-error")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in sorted(ctx.facts.driver_steps):
            step = unnamed_driver_step(ctx, name)
            if step is not None:
                yield self._finding(ctx, step)

    def _finding(self, ctx: Context, step: DriverStep) -> Finding:
        name, pod, error = step.node, step.operand.pod, step.error
        where = f", in the step '{_short(error.step_said)}'" if error.step_said else ""
        instance = "previous instance's " if error.previous else ""
        summary = (f"On {name}, the driver container of {pod.name} ({step.operand.state}) "
                   f"fails: the first error of its {instance}log is {error.quote()}{where}. "
                   f"That means {step.meaning}.")
        causes = []
        stages = ctx.facts.operand_stages.get(name)
        if stages is not None and stages.blocked:
            causes.append(refs.OP001(name))
        # The module it never installed is not loaded: where DRV003 says the driver is not
        # usable on the node, that is this failure's effect (a link that does not fire is
        # dropped).
        causes.append(refs.DRV003(name))
        lines = [
            logs_command(pod, DRIVER_CONTAINER),
            sh.cmd("kubectl", "get", "node", sh.node(name), "-o",
                   sh.raw("jsonpath='{.status.nodeInfo.kernelVersion} "
                          "{.status.nodeInfo.osImage}{\"\\n\"}'")),
            _NEXT[step.kind],
        ]
        return self.finding(
            name, summary, nodes=[name],
            objects=[node_ref(name), ObjectRef(kind="Pod", namespace=pod.namespace,
                                               name=pod.name)],
            evidence=error.evidence, remediation=sh.lines(lines), causes=causes)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

