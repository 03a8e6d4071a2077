"""``lspci -nnk -d 10de:`` listings for the format 1.1 ``host/lspci.txt``.

The layout follows real listings in public threads (NVIDIA/gpu-operator#1328,
cloud-hypervisor/cloud-hypervisor#4353): the device line with class and vendor:device
ids, the subsystem, ``Kernel driver in use`` (absent when nothing is bound) and
``Kernel modules``.
"""

from __future__ import annotations

from samples.samplekit.dcgpu import Slot

# The chip name lspci's pci.ids gives each card model.
CHIPS = {
    "NVIDIA L40S": "AD102GL [L40S]",
    "NVIDIA L4": "AD104GL [L4]",
    "NVIDIA A10": "GA102GL [A10]",
    "NVIDIA A100-PCIE-40GB": "GA100 [A100 PCIe 40GB]",
}
MODULES = "nvidiafb, nouveau, nvidia_drm, nvidia"


def lspci(slots: list[Slot], driver: str | None) -> str:
    """One entry per GPU, each bound to ``driver`` (None: no driver bound)."""
    out = []
    for slot in slots:
        gpu = slot.card.gpu
        device = gpu.pci_device_id.lower()
        subsystem = gpu.pci_subsystem_id.lower()
        chip = CHIPS.get(gpu.product, gpu.product)
        out.append(f"{slot.pci} 3D controller [0302]: NVIDIA Corporation {chip} "
                   f"[10de:{device}] (rev a1)")
        out.append(f"\tSubsystem: NVIDIA Corporation Device [10de:{subsystem[:4]}]")
        if driver is not None:
            out.append(f"\tKernel driver in use: {driver}")
        out.append(f"\tKernel modules: {MODULES}")
    return "\n".join(out) + "\n"
