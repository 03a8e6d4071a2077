"""DRV002: a GPU lost from the PCIe bus or unable to initialise."""

from __future__ import annotations

from collections import defaultdict

from analyzers import commands as sh
from analyzers.facts import driver
from analyzers.facts.driver import GpuRefusal
from analyzers.facts.kernel_events import UNKNOWN_GPU, NodeKernel, log_signals
from analyzers.facts.logindex import node_logs
from analyzers.rule import Context
from bundle.kernel import KernelSignal

LOSS = ("fallen_off_bus", "gpu_lost", "rm_init_adapter_failed", "device_handle")


_AER_SERIOUS = ("fatal", "uncorrected", "recovery_failed")


_TEXT = {
    "fallen_off_bus": "fell off the bus",
    "gpu_lost": "reported lost",
    "rm_init_adapter_failed": "failed to initialise (RmInitAdapter)",
    "device_handle": "NVML could not get a device handle",
    "aer": "PCIe AER error",
}


def _aer_level(signal: KernelSignal) -> str:
    return signal.detail.split(":", 1)[0]


# What a GPU the driver refused (DRV008) shows as a consequence, never hardware: it
# never initialises (RmInitAdapter), NVML has no handle for it, RM calls it lost.
_REFUSAL_CONSEQUENCES = ("rm_init_adapter_failed", "device_handle", "gpu_lost")


def _deferred(signal: KernelSignal, key: str, refused: GpuRefusal | None) -> bool:
    """Whether DRV008's refusal explains this signal: an initialisation failure of a GPU
    the driver refused by address, or of any GPU when a refusal named no address."""
    if refused is None or signal.kind not in _REFUSAL_CONSEQUENCES:
        return False
    return key in refused.keys or refused.unaddressed


def _groups(ctx: Context, name: str, kernel: NodeKernel) -> dict[str, list[KernelSignal]]:
    """GPU key → loss signals (kernel and container logs) and AER errors on its address,
    less what a driver refusal (DRV008) explains."""
    groups: dict[str, list[KernelSignal]] = defaultdict(list)
    signals = kernel.signals_of(*LOSS)
    for path, _container, text in node_logs(ctx.facts, name):
        signals += log_signals(path, text, ("device_handle", "gpu_lost"), "device handle",
                               "gpu is lost")
    refused = driver.gpu_refusal(ctx.facts, name)
    signals = [s for s in signals if not _deferred(s, kernel.key(s.pci), refused)]
    for signal in signals:
        groups[kernel.key(signal.pci)].append(signal)
    known = {g.pci for g in kernel.gpus} | set(groups)
    known |= {kernel.key(e.pci) for e in kernel.xids if e.pci}
    for signal in kernel.signals_of("aer"):
        key = kernel.key(signal.pci)
        if key in known and key != UNKNOWN_GPU and _aer_level(signal) in (*_AER_SERIOUS,
                                                                            "nonfatal"):
            groups[key].append(signal)
    unnamed = groups.pop(UNKNOWN_GPU, [])
    if unnamed and len(groups) == 1:
        next(iter(groups.values())).extend(unnamed)
    elif unnamed and not groups:
        groups[UNKNOWN_GPU] = unnamed
    return groups


def _remediation(name: str, key: str) -> str:
    target = sh.pci(key) if key != UNKNOWN_GPU else sh.raw("<bus id>")
    node = sh.node(name)
    return sh.lines([
        sh.node_shell(node),
        "# first, keep the evidence for the hardware case:",
        "dmesg --time-format iso | grep -iE 'NVRM|Xid|AER|fallen off' | tail -50",
        sh.cmd("lspci", "-vvv", "-s", target, tail=" | grep -iE 'LnkSta|UESta|CESta'"),
        "ipmitool sel list | tail -20",
        "# then, from your own machine, one node at a time:",
        sh.cmd("kubectl", "cordon", node),
        sh.cmd("kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data"),
        sh.note("# reboot {node}; if this GPU is lost again, reseat it / check riser and power "
                "and open a hardware case", node=node),
    ])
