"""DRV010: NVIDIA GPUs are bound to another kernel driver."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts import driver
from analyzers.facts.driver import ForeignBinding
from analyzers.facts.stages import Stage
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import node_ref
from analyzers.rules.drv._binding import _FOREIGN_MODULES, _remediation
from bundle import specs
from bundle.evidence import clip


class GpuBoundToOtherDriver(Rule):
    """NVIDIA GPUs are bound to another kernel driver.

    Per node, ``host/lspci.txt`` (``lspci -nnk -d 10de:``) shows a GPU — a VGA or 3D
    controller of vendor 10de — whose ``Kernel driver in use`` is not ``nvidia``:
    ``vfio-pci`` (left over from a passthrough setup, a ``vfio-pci.ids=`` kernel argument,
    or the GPU Operator's VFIO manager), ``nouveau`` or ``nova_core`` (the in-kernel
    open drivers, which take the GPU at boot), or ``pci-stub``. The matching module in
    ``host/modules.txt`` is quoted too. Audio, USB and serial functions of the same card
    are ignored: their own drivers are normal. Nodes labelled
    ``nvidia.com/gpu.workload.config=vm-passthrough`` or ``vm-vgpu`` (or a ClusterPolicy
    whose ``sandboxWorkloads.defaultWorkload`` is one of these, for nodes without the
    label) are meant to give their GPUs to virtual machines and are left alone. The
    finding causes DRV003's "driver not usable" finding and OP001's driver stage on
    the same node when those fire.

    Why it matters:
    A GPU held by another driver is invisible to nvidia.ko: the driver container
    fails to load or finds no device, nvidia-smi says ``No devices were found``, the
    device plugin advertises nothing and GPU pods stay Pending. The cause is on the
    host, so restarting operator pods never helps.

    Remediation:
    On the node: ``lspci -nnk -d 10de:`` to see each GPU's driver. For vfio-pci,
    remove the ``vfio-pci.ids=`` kernel argument or the ``/etc/modprobe.d`` line that
    claims the device, or set the node's ``nvidia.com/gpu.workload.config`` label to
    ``container``; for nouveau, blacklist it and rebuild the initramfs. Then drain and
    reboot the node, one node at a time.
    """

    id = "DRV010"
    slug = "gpu-bound-to-other-driver"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (
        node(specs.LSPCI),
        node(specs.MODULES, optional=True),
        node(specs.DMESG, optional=True),
        cluster(specs.NODES, optional=True),
        cluster(specs.CLUSTERPOLICIES, optional=True),
        cluster(specs.PODS, optional=True),
        cluster(specs.EVENTS, optional=True),  # the operand stages' evidence
    )
    tags = ("driver", "kernel", "pci")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in sorted(ctx.facts.node_names):
            binding = driver.foreign_binding(ctx.facts, name)
            if binding is not None:
                yield self._finding(ctx, name, binding)

    def _finding(self, ctx: Context, name: str, binding: ForeignBinding) -> Finding:
        path, devices = binding.lspci_path, binding.devices
        drivers = sorted({device.driver or "" for device in devices})
        evidence: list[Evidence] = []
        for device in devices[:4]:
            evidence.append(Evidence(path=path, line=device.line, excerpt=clip(device.text)))
            evidence.append(Evidence(path=path, line=device.driver_line,
                                     excerpt=clip(device.driver_text)))
        modules = ctx.facts.modules(name)
        if modules is not None:
            evidence += [modules.evidence(module) for module in _FOREIGN_MODULES
                         if modules.loaded(module)]
        listed = ", ".join(f"{device.address} ({device.driver})" for device in devices[:4])
        more = f" and {len(devices) - 4} more" if len(devices) > 4 else ""
        summary = (f"On {name}, {len(devices)} NVIDIA GPU(s) are bound to "
                   f"{' and '.join(drivers)} instead of nvidia: {listed}{more}. nvidia.ko "
                   "cannot drive them, so the node offers no GPU to pods.")
        causes = []
        if driver.unusable(ctx.facts, name) is not None:
            causes.append(refs.link("DRV003", name))
        stages = ctx.facts.operand_stages.get(name)
        if stages is not None and stages.first is Stage.DRIVER:
            causes.append(refs.link("OP001", name))
        return self.finding(name, summary, nodes=[name], objects=[node_ref(name)],
                            evidence=evidence, remediation=_remediation(name, drivers),
                            causes=causes)
