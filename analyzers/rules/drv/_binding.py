"""DRV010: NVIDIA GPUs bound to another kernel driver (vfio-pci, nouveau, nova_core)."""

from __future__ import annotations

from analyzers import commands as sh
from analyzers.facts.driver import WORKLOAD_LABEL

# The drivers that make a GPU usable by containers on the node.


# Modules whose presence in /proc/modules backs up a foreign binding.
_FOREIGN_MODULES = ("vfio_pci", "nouveau", "nova_core", "pci_stub", "nvgrace_gpu_vfio_pci")


def _remediation(name: str, drivers: list[str]) -> str:
    node_arg = sh.node(name)
    lines = [
        sh.node_shell(node_arg),
        "lspci -nnk -d 10de:   # the driver bound to each NVIDIA device",
        "cat /proc/cmdline; grep -rE 'vfio|nouveau|pci-stub' /etc/modprobe.d/ "
        "/etc/modules-load.d/ 2>/dev/null",
    ]
    if "vfio-pci" in drivers or "pci-stub" in drivers:
        lines.insert(0, sh.cmd("kubectl", "get", "node", node_arg, "-L", WORKLOAD_LABEL,
                               tail="   # 'container' (or unset) for GPU pods"))
        lines.append("# remove the vfio-pci.ids=/pci-stub.ids= kernel argument or "
                     "modprobe.d line that claims the GPU")
    if "nouveau" in drivers or "nova_core" in drivers:
        lines += [
            "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > "
            "/etc/modprobe.d/blacklist-nouveau.conf",
            "update-initramfs -u   # dracut -f on RHEL-family hosts",
        ]
    lines += [
        sh.cmd("kubectl", "drain", node_arg, "--ignore-daemonsets", "--delete-emptydir-data",
               tail="   # then reboot the node"),
        sh.cmd("kubectl", "uncordon", node_arg,
               tail="   # once lspci shows 'Kernel driver in use: nvidia'"),
    ]
    return sh.lines(lines)
