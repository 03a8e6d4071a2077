"""DRV003: The NVIDIA driver is not usable: version mismatch, module not loaded, or"""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts import driver
from analyzers.facts.driver import Unusable
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.drv._driver import _driver_remediation
from bundle import specs


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
        node(specs.DMESG),
        node(specs.MODULES, optional=True),
        node(specs.NVIDIA_SMI, optional=True),
        node(specs.JOURNALS, optional=True),
        cluster(specs.PODS, optional=True),
        cluster(specs.EVENTS, optional=True),
        LOGS,
    )
    tags = ("driver", "kernel")

    def check(self, ctx: Context) -> Iterable[Finding]:
        kernels = ctx.facts.kernel_events
        for name in sorted(set(ctx.facts.gpu_nodes) | set(kernels)):
            problems = driver.unusable(ctx.facts, name)
            if problems is not None:
                yield self._finding(name, problems)

    def _finding(self, name: str, problems: Unusable) -> Finding:
        summary = (f"On {name}, the NVIDIA driver is not usable: "
                   + "; ".join(problems.texts) + ".")
        # Nothing loads a module that was refused (DRV004) or never delivered because
        # the driver image for this kernel does not exist (OP010).
        links = [refs.link("DRV004", name), refs.link("OP010", name)] \
            if "not-loaded" in problems.kinds else []
        return self.finding(
            name, summary, severity=problems.severity, nodes=[name],
            objects=[node_ref(name)], evidence=problems.evidence,
            remediation=_driver_remediation(name, problems.kinds), caused_by=links,
        )
