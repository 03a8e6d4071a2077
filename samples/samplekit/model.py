"""Plain descriptions of the machines a scenario runs on."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Gpu:
    """One physical GPU as NVML / nvidia-smi report it."""

    product: str  # "NVIDIA GeForce RTX 3090"
    architecture: str  # nvidia-smi product_architecture: "Ampere"
    memory_mib: int  # fb total, also GFD's nvidia.com/gpu.memory
    reserved_mib: int  # fb reserved by the driver
    compute: tuple[int, int]  # CUDA compute capability
    pci_device_id: str  # "2204" (device part of 0x220410DE)
    pci_subsystem_id: str  # "88161043"
    pci_class: str  # "0300" (VGA, GFD mode graphics) or "0302" (3D, mode compute)
    vbios: str
    power_limit_w: float
    power_min_w: float
    power_max_w: float
    idle_power_w: float
    temp_c: int
    max_clocks_mhz: tuple[int, int, int, int]  # graphics, sm, mem, video
    pcie_gen: int
    fan_percent: int | None  # None on laptops (N/A)
    uuid: str
    bus_id: str = "00000000:01:00.0"


@dataclass(frozen=True)
class Host:
    """A Kubernetes node and the machine under it."""

    name: str
    ip: str
    pod_cidr_index: int  # the node's pod CIDR is 10.244.<index>.0/24
    cpus: int
    memory_ki: int
    storage_ki: int
    machine_product: str  # /sys/class/dmi/id/product_name
    cpu_vendor: str  # "AMD" or "Intel"
    boot_at: dt.datetime
    containerd_pid: int
    kubelet_pid: int
    gpu: Gpu | None = None
    control_plane: bool = False
    extra_pci_vendors: tuple[str, ...] = ()  # other NFD pci-<vendor>.present labels
    kernel: str = "6.8.0-88-generic"
    kernel_build: str = "#89-Ubuntu SMP PREEMPT_DYNAMIC Sat Oct 17 14:12:30 UTC 2026"
    os_pretty: str = "Ubuntu 24.04.3 LTS"
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def pod_cidr(self) -> str:
        return f"10.244.{self.pod_cidr_index}.0/24"

    def pod_ip(self, index: int) -> str:
        return f"10.244.{self.pod_cidr_index}.{index}"
