"""DRV003 (driver/library mismatch, module not loaded, nouveau) and DRV004 (Secure Boot)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers import refs, signatures
from analyzers.facts.journals import journal_scan
from analyzers.facts.kernel_events import NodeKernel
from analyzers.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules import drv_smifail as smifail
from analyzers.rules.common import LOGS, event_evidence, node_ref
from analyzers.rules.drv_common import capped, line_evidence, node_logs
from bundle.evidence import clip

MISMATCH_SIGNATURE = "nvml-driver-library-mismatch"
_OTHER_DRIVER = re.compile(r"not called|already bound|another driver|nouveau|rivafb",
                           re.IGNORECASE)
_KEY_REFUSED = re.compile(r"not permitted|required key|key was rejected", re.IGNORECASE)
BLOCKED_SIGNATURE = "kernel-module-load-blocked"


@dataclass(frozen=True, slots=True)
class Modules:
    """``host/modules.txt``: the loaded nvidia* / nouveau modules, with their lines."""

    path: str
    lines: dict[str, tuple[int, str]]

    def loaded(self, module: str) -> bool:
        return module in self.lines

    def evidence(self, module: str) -> Evidence:
        number, text = self.lines[module]
        return Evidence(path=self.path, line=number, excerpt=clip(text))


def read_modules(ctx: Context, name: str) -> Modules | None:
    artifacts = ctx.bundle.node(name)
    text = artifacts.host("modules.txt")
    if text is None:
        return None
    lines: dict[str, tuple[int, str]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split()
        if fields:
            lines.setdefault(fields[0], (number, raw))
    return Modules(artifacts.path("host/modules.txt"), lines)


def smi_failure(ctx: Context, name: str) -> str | None:
    """Why nvidia-smi gave nothing on the node, or None when it listed GPUs: in
    nvidia-smi's own words and exit code when they say the driver is not usable."""
    artifacts = ctx.bundle.node(name)
    smi = artifacts.nvidia_smi
    if smi is not None and smi.gpus:
        return None
    said = smifail.smi_failure(ctx, name)
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
    for path, container, text in node_logs(ctx, name):
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


class DriverNotUsable(Rule):
    """The NVIDIA driver is not usable: version mismatch, module not loaded, or
    another driver (nouveau, nova_core) owns the GPU.

    Per node: the kernel's ``NVRM: API mismatch`` (both wordings) and NVML's
    ``Driver/library version mismatch`` in container logs, events and the kubelet or
    containerd journal; ``host/modules.txt`` without the ``nvidia`` module on a GPU
    node whose nvidia-smi failed or was not collected (nvidia-smi's own words and exit
    code, from the manifest or the file it left, are quoted, and a version mismatch it
    reports counts as one); nouveau loaded (``host/modules.txt``) or bound to the GPU,
    and nova_core bound (kernel lines).

    Why it matters:
    Without a working driver nothing on the node can use a GPU: the operator's
    validator and device plugin stay in Init, the node advertises no GPUs, and pods
    fail. A mismatch typically follows a driver upgrade without a reboot; nouveau
    takes the GPU at boot before nvidia.ko can.

    Remediation:
    Confirm on the node: ``lsmod | grep -E 'nvidia|nouveau'``, ``cat
    /proc/driver/nvidia/version``, ``dmesg --time-format iso | grep -iE 'NVRM|nouveau'``.
    Mismatch: cordon and drain the node, then reboot (or unload and reload the module)
    so kernel module and libraries match. nouveau: blacklist it
    (``/etc/modprobe.d/blacklist-nouveau.conf`` with ``blacklist nouveau`` and
    ``options nouveau modeset=0``), rebuild the initramfs, reboot — one node at a time.
    """

    id = "DRV003"
    slug = "driver-not-usable"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (
        node("dmesg.txt"),
        node("host/modules.txt", optional=True),
        node("nvidia-smi.xml", optional=True),
        node("journal/*.jsonl", optional=True),
        cluster("pods.json", optional=True),
        cluster("events.json", optional=True),
        LOGS,
    )
    tags = ("driver", "kernel")

    def check(self, ctx: Context) -> Iterable[Finding]:
        kernels = ctx.facts.kernel_events
        for name in sorted(set(ctx.facts.gpu_nodes) | set(kernels)):
            kernel = kernels.get(name)
            if kernel is None:
                continue
            problems = _judged_problems(ctx, name, kernel)
            if problems.texts:
                yield self._finding(name, problems)

    @classmethod
    def explains(cls, ctx: Context, name: str) -> bool:
        """Whether this rule finds the driver unusable on ``name`` (for the findings that
        link to it: OP001's driver stage, DRV009)."""
        kernel = ctx.facts.kernel_events.get(name)
        if kernel is None or cls.skip_reason(ctx.bundle) is not None:
            return False
        return bool(_judged_problems(ctx, name, kernel).texts)

    def _problems(self, ctx: Context, name: str, kernel: NodeKernel) -> _Problems:
        problems = _Problems()
        modules = read_modules(ctx, name)
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
        said = smifail.smi_failure(ctx, name)
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

    def _finding(self, name: str, problems: _Problems) -> Finding:
        summary = (f"On {name}, the NVIDIA driver is not usable: "
                   + "; ".join(problems.texts) + ".")
        # Nothing loads a module that was refused (DRV004) or never delivered because
        # the driver image for this kernel does not exist (OP010).
        links = [refs.DRV004(name), refs.OP010(name)] if "not-loaded" in problems.kinds else []
        return self.finding(
            name, summary, severity=problems.severity, nodes=[name],
            objects=[node_ref(name)], evidence=problems.evidence,
            remediation=_driver_remediation(name, problems.kinds), caused_by=links,
        )


def _judged_problems(ctx: Context, name: str, kernel: NodeKernel) -> _Problems:
    """DRV003's verdict on ``name``, judged once per run: DRV003 and the rules that link
    to it (OP001, DRV009, ...) read it from the facts."""
    return ctx.facts.judged(DriverNotUsable.id, name,
                            lambda: DriverNotUsable()._problems(ctx, name, kernel))


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


# --------------------------------------------------------------------------- DRV004


def secure_boot(ctx: Context, name: str) -> tuple[bool | None, Evidence | None]:
    """(enabled, evidence line) from ``host/secureboot.txt`` (``mokutil --sb-state``)."""
    text = ctx.bundle.node(name).host("secureboot.txt")
    if text is None:
        return None, None
    path = f"nodes/{name}/host/secureboot.txt"
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.lower().split()
        if len(words) >= 2 and words[0] == "secureboot":
            evidence = Evidence(path=path, line=number, excerpt=clip(raw.strip()))
            state = {"enabled": True, "disabled": False}.get(words[1])
            return state, evidence
    return None, None


def builds_module_on_node(ctx: Context, name: str) -> bool:
    """The driver container compiles an unsigned module on this node (DKMS-style):
    the operator runs the driver and precompiled modules are not used."""
    policy = ctx.facts.cluster_policy
    has_pod = "driver" in ctx.facts.operands.get(name, {})
    if policy is None:
        return has_pod
    if policy.component_enabled("driver") is False and not has_pod:
        return False
    return not ctx.facts.driver_precompiled


class SecureBootRefusedModule(Rule):
    """Secure Boot refuses (or will refuse) the unsigned NVIDIA kernel module.

    Fires on nodes where ``host/secureboot.txt`` (``mokutil --sb-state``) says
    ``SecureBoot enabled`` and the kernel logged a lockdown refusal
    (``Lockdown: ... unsigned module loading is restricted``), a failed module load,
    or ``module verification failed`` for an nvidia module; or the driver container
    log shows the refused ``modprobe``; or the nvidia module is absent from
    ``host/modules.txt`` while the driver is built on the node (driver container
    without precompiled, signed modules).

    Why it matters:
    With Secure Boot the kernel loads only modules signed with a trusted key. A module
    compiled on the node (DKMS or the driver container) is unsigned, so the node has
    no GPU driver and every GPU operand waits in Init. A module that loaded with a
    verification warning shows enforcement is off today and will fail once it is on.

    Remediation:
    Check on the node: ``mokutil --sb-state``, ``dmesg --time-format iso | grep -iE
    'Lockdown|module verification'``. Fix one of: use signed precompiled driver
    images (``driver.usePrecompiled=true``) or distribution-signed driver packages;
    sign the module and enrol the key with ``mokutil --import``; or disable Secure Boot
    in the firmware if policy allows. Cordon and drain the node first.
    """

    id = "DRV004"
    slug = "secure-boot-refused-module"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (
        node("host/secureboot.txt"),
        node("dmesg.txt", optional=True),
        node("host/modules.txt", optional=True),
        cluster("clusterpolicies.json", optional=True),
        node("journal/*.jsonl", optional=True),
        node("nvidia-smi.xml", optional=True),
        cluster("pods.json", optional=True),
        LOGS,
    )
    tags = ("driver", "kernel", "secure-boot")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in ctx.bundle.node_names:
            judged = _refusal_on(ctx, name)
            if judged is not None:
                yield self._finding(*judged)

    @classmethod
    def explains(cls, ctx: Context, name: str) -> bool:
        """Whether this rule finds the module refused on ``name`` (see DriverNotUsable)."""
        return _refusal_on(ctx, name) is not None

    def _finding(self, name: str, sb_line: Evidence, refused: list[Evidence],
                 unsigned: list[Evidence], absent: bool, dkms: bool) -> Finding:
        texts = []
        if refused:
            texts.append("the kernel refused to load an unsigned module")
        if absent:
            texts.append("the nvidia module is not loaded"
                         + (" and the driver container builds it on the node, unsigned"
                            if dkms else ""))
        if unsigned:
            texts.append("the nvidia module is unsigned ('module verification failed')"
                         + ("" if refused or absent else "; it loaded only because "
                            "enforcement is off, and will be refused once it is on"))
        severity = Severity.CRITICAL if refused or absent else Severity.MEDIUM
        summary = f"On {name}, Secure Boot is enabled and " + "; ".join(texts) + "."
        evidence = [sb_line, *capped(refused, 3), *capped(unsigned, 2)]
        if absent:
            evidence.append(Evidence(path=f"nodes/{name}/host/modules.txt",
                                     excerpt="(no 'nvidia' module in /proc/modules)"))
        # The refusal is the root: the driver container's failed install (OP010) and the
        # missing module (DRV003) follow from it.
        causes = [refs.DRV003(name)] if absent else []
        if refused or absent:
            causes.append(refs.OP010(name))
        return self.finding(
            name, summary, severity=severity, nodes=[name], objects=[node_ref(name)],
            evidence=evidence, causes=causes, remediation=_secure_boot_remediation(name),
            # an unsigned module that loaded: the refusal is predicted, not seen
            confidence=None if refused or absent else Confidence.LIKELY,
        )


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


_Refusal = tuple[str, Evidence, list[Evidence], list[Evidence], bool, bool]


def _refusal_on(ctx: Context, name: str) -> _Refusal | None:
    """DRV004's verdict on one node: (node, Secure Boot line, refusals, unsigned-module
    lines, module absent, built on the node), or None when it has nothing to say. Judged
    once per run: DRV004 and the rules that link to it read it from the facts."""
    return ctx.facts.judged(SecureBootRefusedModule.id, name, lambda: _judge_refusal(ctx, name))


def _judge_refusal(ctx: Context, name: str) -> _Refusal | None:
    enabled, sb_line = secure_boot(ctx, name)
    if not enabled or sb_line is None:
        return None
    kernels = ctx.facts.kernel_events
    signals = kernels[name].signals if name in kernels else ()
    modules = read_modules(ctx, name)
    loaded = modules is not None and modules.loaded("nvidia")
    refused = [line_evidence(s.source) for s in signals
               if _refusal(s.kind, s.detail, s.source.message, loaded)]
    refused += _blocked_in_logs(ctx, name)
    unsigned = [line_evidence(s.source) for s in signals
                if s.kind == "module_verification" and s.detail.startswith("nvidia")]
    if name not in ctx.facts.gpu_node_set and not unsigned:
        return None
    absent = modules is not None and not loaded
    dkms = absent and builds_module_on_node(ctx, name)
    if not (refused or unsigned or dkms):
        return None
    return name, sb_line, refused, unsigned, absent, dkms


def _refusal(kind: str, detail: str, message: str, nvidia_loaded: bool) -> bool:
    """A lockdown or key refusal that can concern the nvidia module: any such line while
    nvidia is not loaded, only lines naming nvidia once it is."""
    if kind == "lockdown" or (kind == "module_load_failed" and _KEY_REFUSED.search(detail)):
        return not nvidia_loaded or "nvidia" in message.lower()
    return False


def _blocked_in_logs(ctx: Context, name: str) -> list[Evidence]:
    signature = (signatures.get(BLOCKED_SIGNATURE),)
    found: list[Evidence] = []
    for path, container, text in node_logs(ctx, name, components=("driver",)):
        for hit in signatures.match(text, "log", container=container, signatures=signature):
            found.append(Evidence(path=path, line=hit.line, excerpt=clip(hit.text)))
            break
    return found
