"""Plain-language wording for Xid categories and NVIDIA's resolution buckets.

The catalog (``analyzers/data/xid.toml``) stores NVIDIA's bucket identifiers and this
project's category per Xid; these tables say what they mean for a support engineer.
"""

from __future__ import annotations

from analyzers.knowledge.xid import XidInfo

LIKELY_CAUSE: dict[str, str] = {
    "user_app": "the workload (bad memory access, illegal instruction or data); "
                "hardware only if it repeats on this GPU across different applications",
    "driver": "driver or GPU firmware software",
    "gpu_hang": "the GPU stopped processing work (driver, firmware or hardware hang)",
    "gsp": "the GPU System Processor firmware stopped answering the driver",
    "memory_ecc": "GPU memory (HBM or on-chip SRAM) errors: hardware",
    "pcie_bus": "the PCIe path: link, slot or riser, power, cooling, or the GPU itself",
    "nvlink": "an NVLink or NVSwitch link, or the GPU at its other end",
    "engine_exception": "a copy, video or JPEG engine exception, usually the workload",
    "hardware": "GPU hardware (micro-controller, initialisation, resource retirement)",
    "power": "board power delivery or the power-smoothing circuitry",
    "virtualization": "vGPU setup (guest and host driver versions, vGPU type)",
    "confidential_computing": "confidential-computing configuration",
    "informational": "nothing by itself: it accompanies another Xid",
    "unused": "a legacy code that Ampere and newer GPUs should not raise",
    "unknown": "unknown: the number is not in the bundled Xid catalog",
}


BUCKET: dict[str, str] = {
    "RESTART_APP": "restart the application; the GPU needs no reset",
    "RESET_GPU": "drain the GPU and reset it, or reboot the node",
    "RESTART_BM": "drain and reboot the node",
    "RESTART_VM": "restart the VM that owns the GPU",
    "IGNORE": "no action",
    "CONTACT_SUPPORT": "open a case with NVIDIA or the server vendor",
    "CHECK_MECHANICALS": "check the GPU's seating and power cables",
    "UPDATE_SWFW": "update the driver and firmware",
    "CHECK_UVM": "reset the GPU if UVM or vGPU is in use, otherwise nothing",
    "XID_154": "do what the accompanying Xid 154 says (restart the app without one)",
    "XID_154_EVAL": "do what the accompanying Xid 154 says (restart the app without one)",
    "WORKFLOW_XID_13": "if the same GPC/TPC repeats, run DCGM diagnostics; "
                       "otherwise fix the application",
    "WORKFLOW_XID_31": "if faults repeat on this GPU across applications, run DCGM "
                       "diagnostics; otherwise fix the application",
    "WORKFLOW_XID_45": "alone: restart Fabric Manager; with other Xids: follow those",
    "WORKFLOW_XID_48": "alone: reset the GPU; with Xid 63/64: drain and reset; check "
                       "sram_threshold_exceeded",
    "WORKFLOW_NVLINK_ERR": "decode the NVLink registers in the message (NVIDIA's "
                           "workflow); the worst outcome is a GPU reset",
    "WORKFLOW_NVLINK5_ERR": "decode intrInfo/errorStatus with NVIDIA's Xid 144-150 table; "
                            "the worst outcome is a GPU reset",
    "CHECK_APP/CUDA": "check the application and CUDA stack",
    "INVESTIGATE_SW": "find the process that triggered it (PID in the message)",
    "INVESTIGATE_SW_USER": "check whether software or a user triggered it",
    "INVESTIGATE_HOST": "check the host's other logs",
    "INVESTIGATE_LINK_SI": "investigate the NVLink's signal integrity",
    "INVESTIGATE_PEER_DEVICE": "investigate the device at the other end of the link",
    "XID_137_FLOW": "debug the application's peer access (compute-sanitizer)",
    "NONE_LISTED": "NVIDIA lists no action yet",
    "UNDOCUMENTED": "NVIDIA documents no action for it",
}


def bucket(action: str | None) -> str:
    if not action:
        return "none listed"
    key = " ".join(action.split()).upper()
    if key.startswith("SOLO: RESTART_FM"):
        return "alone: restart Fabric Manager; with other Xids: follow those"
    if key.startswith("IGNORE"):
        return "no action, it accompanies other errors"
    if key.startswith("N/A"):
        return "none, informational"
    return BUCKET.get(key, action)


def cause(info: XidInfo) -> str:
    return LIKELY_CAUSE.get(info.category, info.category)


def action(info: XidInfo) -> str:
    """NVIDIA's immediate action, and the follow-up when it differs."""
    text = f"{info.action}: {bucket(info.action)}"
    follow = info.action_investigatory
    if follow and follow != "None" and follow != info.action:
        text += f"; if it recurs, {follow}: {bucket(follow)}"
    return text
