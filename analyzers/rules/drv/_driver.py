"""DRV003 (driver/library mismatch, module not loaded, nouveau) and DRV004 (Secure Boot)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers.facts import smi as smifail
from analyzers.facts.journals import journal_scan
from analyzers.facts.kernel_events import NodeKernel, line_evidence
from analyzers.facts.logindex import node_logs
from analyzers.knowledge import signatures
from analyzers.results.models import Evidence, Severity
from analyzers.rule import Context
from analyzers.rules.common import event_evidence
from analyzers.rules.drv._common import capped
from bundle.evidence import clip

MISMATCH_SIGNATURE = "nvml-driver-library-mismatch"


_OTHER_DRIVER = re.compile(r"not called|already bound|another driver|nouveau|rivafb",
                           re.IGNORECASE)


def smi_failure(ctx: Context, name: str) -> str | None:
    """Why nvidia-smi gave nothing on the node, or None when it listed GPUs: in
    nvidia-smi's own words and exit code when they say the driver is not usable."""
    artifacts = ctx.bundle.node(name)
    smi = artifacts.nvidia_smi
    if smi is not None and smi.gpus:
        return None
    said = ctx.facts.smi_failure(name)
    if said is not None:
        return f"nvidia-smi failed: {clip(said.said, 160) or said.meaning}"
    item = ctx.bundle.manifest.item(artifacts.path("nvidia-smi.xml"))
    if item is not None and item.error:
        return f"nvidia-smi failed: {item.error}"
    if not artifacts.has("nvidia-smi.xml"):
        return "nvidia-smi.xml was not collected"
    return "nvidia-smi listed no GPU"


@dataclass
class _Problems:
    texts: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    severity: Severity = Severity.HIGH
    kinds: set[str] = field(default_factory=set)

    def add(self, kind: str, text: str, evidence: list[Evidence], severity: Severity) -> None:
        self.kinds.add(kind)
        self.texts.append(text)
        self.evidence.extend(capped(evidence, 3))
        if severity.rank > self.severity.rank:
            self.severity = severity


def _mismatch_evidence(ctx: Context, name: str, kernel: NodeKernel) -> list[Evidence]:
    found = [line_evidence(s.source) for s in kernel.signals_of("api_mismatch")]
    mismatch = signatures.get(MISMATCH_SIGNATURE)
    signature = (mismatch,)
    for path, container, text in node_logs(ctx.facts, name):
        for hit in signatures.match(text, "log", container=container, signatures=signature):
            found.append(Evidence(path=path, line=hit.line, excerpt=clip(hit.text)))
            break
    for unit in ("kubelet", "containerd"):  # the shared scan (facts/journals) kept the hits
        for entry in journal_scan(ctx.bundle, name, unit).matching(MISMATCH_SIGNATURE)[:1]:
            found.append(Evidence(path=f"nodes/{name}/journal/{unit}.jsonl",
                                  line=entry.line, excerpt=clip(entry.message)))
    for pod in ctx.facts.pods_by_node.get(name, []):
        found += [event_evidence(event)
                  for event in ctx.facts.pod_events_with(pod, MISMATCH_SIGNATURE)[:1]]
    return found


def _judged_problems(ctx: Context, name: str, kernel: NodeKernel) -> _Problems:
    """DRV003's verdict on ``name``, judged once per run: DRV003 and the rules that link
    to it (OP001, DRV009, ...) read it from the facts."""
    return ctx.facts.judged("DRV003", name, lambda: _problems(ctx, name, kernel))


def _driver_remediation(name: str, kinds: set[str]) -> str:
    node = sh.node(name)
    lines = [
        sh.node_shell(node),
        "lsmod | grep -E '^(nvidia|nouveau)'; cat /proc/driver/nvidia/version",
        "dmesg --time-format iso | grep -iE 'NVRM|nouveau|nova' | tail -30",
        sh.cmd("kubectl", "cordon", node, sh.raw(";"), "kubectl", "drain", node,
               "--ignore-daemonsets", "--delete-emptydir-data"),
    ]
    if "nouveau" in kinds:
        lines += [
            "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > "
            "/etc/modprobe.d/blacklist-nouveau.conf",
            "update-initramfs -u   # dracut -f on RHEL-family hosts; then reboot",
        ]
    if "mismatch" in kinds:
        lines.append("# reboot (or rmmod and reload the nvidia modules) so the kernel module "
                     "matches the libraries; with the driver container, remove host driver "
                     "packages")
    if "not-loaded" in kinds:
        lines.append("modprobe nvidia && dmesg | tail -20   # the refusal reason, if any")
    lines.append(sh.cmd("kubectl", "uncordon", node, tail="   # after nvidia-smi works again"))
    return sh.lines(lines)


def _secure_boot_remediation(name: str) -> str:
    node = sh.node(name)
    return sh.lines(
        sh.node_shell(node),
        "mokutil --sb-state",
        "dmesg --time-format iso | grep -iE 'Lockdown|module verification' | tail -20",
        "# then, one node at a time (cordon and drain it first): signed precompiled driver",
        "# images (driver.usePrecompiled=true) or distribution-signed driver packages; or",
        "# sign the module and enrol its key (mokutil --import); or turn Secure Boot off",
        "# in the firmware where policy allows",
    )


def _problems(ctx: Context, name: str, kernel: NodeKernel) -> _Problems:
    problems = _Problems()
    modules = ctx.facts.modules(name)
    owners = [s for s in kernel.signals_of("nouveau", "nova_core", "probe_failed")
              if s.kind != "probe_failed" or _OTHER_DRIVER.search(s.source.message)]
    nouveau = [line_evidence(s.source) for s in owners]
    if modules is not None and modules.loaded("nouveau"):
        nouveau.insert(0, modules.evidence("nouveau"))
    if nouveau:
        drivers = sorted({s.kind for s in owners if s.kind != "probe_failed"}
                         | ({"nouveau"} if modules and modules.loaded("nouveau") else set()))
        who = " and ".join(drivers) or "another driver"
        problems.add("nouveau", f"{who} holds the GPU, so nvidia.ko cannot bind it",
                     nouveau, Severity.CRITICAL)
    mismatch = _mismatch_evidence(ctx, name, kernel)
    failure = smi_failure(ctx, name)
    said = ctx.facts.smi_failure(name)
    if said is not None and said.meaning == smifail.MISMATCH_MEANING:
        mismatch += said.evidence
    if mismatch:
        versions = next((s.detail for s in kernel.signals_of("api_mismatch")
                         if "client " in s.detail and "not on this line" not in s.detail),
                        "")
        text = "driver user-space libraries and kernel module differ in version"
        problems.add("mismatch", text + (f" ({versions})" if versions else ""), mismatch,
                     Severity.CRITICAL if failure else Severity.HIGH)
    gpu_node = name in ctx.facts.gpu_node_set
    if (modules is not None and gpu_node and failure and not modules.loaded("nvidia")):
        evidence = [Evidence(path=modules.path, excerpt="(no 'nvidia' module in "
                             "/proc/modules)")]
        evidence += said.evidence if said is not None else ()
        problems.add("not-loaded", f"the nvidia kernel module is not loaded ({failure})",
                     evidence, Severity.CRITICAL)
    return problems
