"""DRV006: GPU health as nvidia-smi reports it (memory errors, repairs, fabric, slowdowns):
what to do about it (the readings are analyzers/facts/gpu_health.py's)."""

from __future__ import annotations

from analyzers import commands as sh
from analyzers.facts.kernel_events import GpuIdentity


def _remediation(name: str, pci: str, identity: GpuIdentity | None, kinds: set[str]) -> str:
    index: int | sh.Raw = identity.index if identity is not None and \
        identity.index is not None else sh.raw("<index>")
    node, gpu = sh.node(name), sh.pci(pci)
    lines = [sh.note("# on {node}:", node=node)]
    if kinds & {"memory", "recovery"}:
        lines += [
            sh.cmd("nvidia-smi", "-q", "-i", gpu, "-d", "ECC,ROW_REMAPPER,PAGE_RETIREMENT"),
            sh.cmd("kubectl", "cordon", node),
            sh.cmd("kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                   tail="   # one node at a time"),
            sh.cmd("nvidia-smi", "-r", "-i", gpu,
                   tail="   # or reboot; applies pending remaps/retirements"),
            sh.cmd("dcgmi", "diag", "-r", "3", "-i", index,
                   tail="   # failed remap or threshold exceeded: hardware case"),
        ]
    if "fabric" in kinds:
        lines += [sh.cmd("nvidia-smi", "-q", "-i", gpu, tail=" | grep -A4 -i fabric"),
                  "systemctl status nvidia-fabricmanager; journalctl -u nvidia-fabricmanager "
                  "-n 50"]
    if "slowdown" in kinds:
        lines += [sh.cmd("nvidia-smi", "-q", "-i", gpu, "-d", "PERFORMANCE,TEMPERATURE,POWER"),
                  "# check airflow, fans and power supplies (BMC: ipmitool sdr; ipmitool sel list)"]
    return sh.lines(lines)
