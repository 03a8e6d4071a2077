"""DRV009: nvidia-smi itself failed on the node."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts import next_step
from analyzers.facts.smi import NOT_LOADED, SMI_FILE, SmiFailure
from analyzers.models import Confidence, Finding, Severity
from analyzers.rule import Context, Input, Rule, cluster, node
from analyzers.rules.common import node_ref
from analyzers.rules.drv._smi import _explanations
from bundle.evidence import clip


class NvidiaSmiFailed(Rule):
    """nvidia-smi itself failed on the node.

    The collector's ``nvidia-smi -q -x`` ended with an error that says the driver or
    GPU is not usable: ``NVIDIA-SMI has failed because it couldn't communicate with the
    NVIDIA driver`` (exit code 9), ``No devices were found`` (6),
    ``Failed to initialize NVML: Driver/library version mismatch``, or another of
    nvidia-smi's documented exit codes (12 NVML missing, 14 infoROM, 15 GPU lost). The
    words come from the manifest's recorded error or from ``nvidia-smi.xml`` itself
    (nvidia-smi prints them on stdout). The finding links the one that explains it —
    DRV004 (Secure Boot), DRV003 (driver not usable), OP010 (driver container cannot
    install), OP001 (the operator's driver container failing) — and is then of low
    severity, a symptom listed under its cause; or none does: it stays high, quotes the
    first error among the kernel's NVIDIA lines of the node's dmesg or names the command
    to ask for next, and causes OP001's driver stage where that is the validator waiting
    on the host's driver.

    Why it matters:
    nvidia-smi failing is the node telling you its driver does not work: no GPU
    operand, device plugin or workload can use a GPU there. It is not a gap in the
    bundle; the collector saw the failure.

    Remediation:
    On the node: ``nvidia-smi; echo $?``, ``lsmod | grep -E '^(nvidia|nouveau)'``,
    ``dmesg --time-format iso | grep -iE 'NVRM|nouveau|Lockdown'``; then follow the
    linked finding.
    """

    id = "DRV009"
    slug = "nvidia-smi-failed"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (Input("manifest.json"), node(SMI_FILE, optional=True),
              node("host/modules.txt", optional=True), cluster("pods.json", optional=True),
              cluster("clusterpolicies.json", optional=True),
              cluster("events.json", optional=True))  # the operand stages' evidence
    tags = ("driver", "nvidia-smi")

    def check(self, ctx: Context) -> Iterable[Finding]:
        names = {item.node for item in ctx.bundle.manifest.items
                 if item.node and item.path.endswith("/" + SMI_FILE)}
        if not names and not any(ctx.bundle.has(f"nodes/{name}/{SMI_FILE}")
                                 for name in ctx.bundle.node_names):
            # No node ran nvidia-smi for the collector (no node files: a managed or
            # immutable OS, a layout without them): nothing says it worked either.
            self.unjudged("no node recorded an nvidia-smi run to judge")
        names |= set(ctx.bundle.node_names)
        for name in sorted(names):
            failure = ctx.facts.smi_failure(name)
            if failure is not None:
                yield self._finding(ctx, failure)

    @classmethod
    def explains(cls, ctx: Context, name: str) -> bool:
        """Whether nvidia-smi failed on ``name`` and no other finding explains it (for
        OP001's driver stage on a host-driver node, which then hangs under it)."""
        if cls.skip_reason(ctx.bundle) is not None:
            return False
        return ctx.facts.smi_failure(name) is not None and not _explanations(ctx, name)

    def _finding(self, ctx: Context, failure: SmiFailure) -> Finding:
        name = failure.node
        links = _explanations(ctx, name)
        code = f" (exit code {failure.exit_code})" if failure.exit_code is not None else ""
        meaning, evidence = failure.meaning, list(failure.evidence)
        modules = ctx.facts.modules(name) if meaning == NOT_LOADED else None
        if modules is not None and modules.loaded("nvidia"):
            # nvidia-smi's words say "no module"; the node's own list says otherwise.
            meaning = ("nvidia-smi cannot communicate with the driver, although "
                       "host/modules.txt lists the nvidia module as loaded (its device nodes, "
                       "a GPU it did not initialise or a version mismatch remain)")
            evidence.append(modules.evidence("nvidia"))
        summary = (f"On {name}, nvidia-smi failed{code}: {meaning}. It said: "
                   f"{clip(failure.said, 160).rstrip(' .') or '(nothing)'}.")
        if links:
            summary += " Why: " + "; ".join(text for _, text in links) + "."
        else:
            summary += next_step.for_smi(ctx.facts, name).sentence(
                "nvidia-smi", "the node's kernel log shows")
        node_arg = sh.node(name)
        remediation = sh.lines(
            sh.node_shell(node_arg),
            "nvidia-smi; echo \"exit code $?\"",
            "lsmod | grep -E '^(nvidia|nouveau)'; cat /proc/driver/nvidia/version",
            "dmesg --time-format iso | grep -iE 'NVRM|nouveau|Lockdown' | tail -30",
            "# then follow the linked finding (DRV003, DRV004, OP010, OP001) for the fix",
        )
        # Explained, it restates its cause's effect and stands below it; unexplained, it
        # is the best the bundle says about the node.
        severity = Severity.LOW if links else self.severity
        return self.finding(name, summary, severity=severity, nodes=[name],
                            objects=[node_ref(name)],
                            evidence=evidence, remediation=remediation,
                            caused_by=[finding for finding, _ in links])
