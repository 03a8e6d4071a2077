"""Regenerate ``xid.toml`` from a JSON extract of NVIDIA's Xid catalog plus the wording
kept here, or check the committed file against such an extract. A developer tool: the
extract is not part of this repository, and gpu-triage reads only ``xid.toml``.

Run from the project root::

    python analyzers/data/gen_xid_toml.py XID_JSON           # rewrite xid.toml and its twin
    python analyzers/data/gen_xid_toml.py --check XID_JSON   # exit 1 on any difference

``XID_JSON`` is a JSON list with one object per Xid, as NVIDIA's "Analyzing Xid Errors
with the Xid Catalog" (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)
describes each code: ``xid`` (the number), ``category`` (a cause category),
``action`` and ``action_investigatory`` (NVIDIA's immediate and follow-up resolution
buckets; the second may be null), ``applies_to`` (``{"A100": bool, "H100": bool,
"B100": bool, "GB200": bool}`` or null), ``mnemonic`` (the driver's symbolic name, or
null), ``app_error`` (whether the Kubernetes device plugin skips it as an application
error) and ``source`` (the URL the entry came from). Other keys are ignored, except that
``--check`` reads ``name``, ``notes``, ``legacy_name`` and ``app_error_note`` where
present to make sure none of their text was copied into this project's wording.

Writing takes the identifiers above from the extract. The short ``name`` and the
``meaning`` of every code are this project's own wording and live in ``TEXT`` below; edit
them here, not in the TOML. It then rewrites the JSON twins of the data files
(``python -m analyzers.datafiles``).

``--check`` changes nothing. It reports each Xid whose table in ``xid.toml`` differs from
what the extract and ``TEXT`` give (a new catalog revision, an edit made in the TOML),
Xids the extract has and ``TEXT`` lacks, and wording that repeats the extract's own.
``tests/test_xid_catalog.py`` checks the catalog on its own terms and needs no extract.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TARGET = Path(__file__).resolve().parent / "xid.toml"

# Device-plugin release that first skipped the Xid as an application error.
APP_ERROR_SINCE = {109: "v0.18.0"}

_LEGACY = "Not raised on Ampere or newer GPUs; if one of those reports it, open a support case."
_RESERVED = "NVIDIA lists the code as unused, so it is unexpected on current GPUs."


def _legacy(what: str) -> str:
    return f"Legacy code for {what}. {_LEGACY}"


def _ce(n: int) -> tuple[str, str]:
    return (
        f"Copy engine {n} error",
        f"Copy engine {n} raised an exception while moving data. "
        "Restart the application; open a support case if it keeps coming back.",
    )


def _nvdec(n: int) -> tuple[str, str]:
    return (
        f"NVDEC{n} video decoder error",
        f"Video decoder {n} raised an exception, usually on bad input or a decoding bug. "
        "Restart the application; escalate if it repeats.",
    )


def _nvjpg(n: int) -> tuple[str, str]:
    return (
        f"NVJPG{n} JPEG engine error",
        f"JPEG engine {n} raised an exception. Restart the application; escalate if it repeats.",
    )


def _nvlink5(unit: str, extra: str) -> tuple[str, str]:
    return (
        f"NVLink5 {unit} error",
        f"The {unit} block of a Blackwell NVLink5 link reported a problem. {extra}",
    )


TEXT: dict[int, tuple[str, str]] = {
    1: ("FIFO method error (legacy)", _legacy("a command the channel FIFO rejected")),
    2: (
        "FIFO software method error (legacy)",
        _legacy("a software method the driver could not serve"),
    ),
    3: ("FIFO unknown method (legacy)", _legacy("an unrecognised method in a command stream")),
    4: (
        "FIFO channel busy (legacy)",
        _legacy("a channel FIFO found busy or holding a broken stream"),
    ),
    5: ("FIFO runout overflow (legacy)", f"Old code for a command FIFO overflow. {_RESERVED}"),
    6: ("FIFO parse error (legacy)", _legacy("a command stream the FIFO could not parse")),
    7: (
        "Bad push buffer address (legacy)",
        _legacy("a command buffer address that pointed at an invalid page"),
    ),
    8: (
        "Channel idle timeout",
        "A channel stopped making progress and the driver's watchdog timed it out. "
        "Restart the workload; if the same GPU keeps doing it, take it to support.",
    ),
    9: (
        "GR instance error (legacy)",
        _legacy("a driver mistake while setting up a graphics engine instance"),
    ),
    10: ("GR single-step error (legacy)", f"Old graphics single-step debugging code. {_RESERVED}"),
    11: (
        "Method for missing hardware",
        "The graphics engine was sent a method it has no hardware for, which means the "
        "command stream from the application or CUDA stack is broken. Restart the app and "
        "check its code and CUDA version.",
    ),
    12: (
        "GR exception handling error (legacy)",
        _legacy("a driver failure while handling a GPU exception"),
    ),
    13: (
        "Graphics/SM exception",
        "An SM trapped on an instruction, typically an out-of-range access or illegal "
        "instruction in user code. Almost always an application bug; the same GPC/TPC "
        "failing across different jobs can mean bad hardware.",
    ),
    14: (
        "Injected test error",
        "An error injected on purpose from user space to test error handling; nothing is "
        "broken. Only worth a question if nobody was running such tests.",
    ),
    15: ("Scanline timeout (legacy)", f"Old display scanline timeout. {_RESERVED}"),
    16: (
        "Display engine hang (legacy)",
        _legacy("a display engine that stopped answering (vblank callback timeout)"),
    ),
    17: (
        "Robust-channel parameter error (legacy)",
        f"Old robust-channel parameter check. {_RESERVED}",
    ),
    18: (
        "Bus mastering disabled (legacy)",
        _legacy("finding PCI bus mastering switched off in the GPU's config space"),
    ),
    19: ("Display notifier missed (legacy)", _legacy("a display engine that missed a notifier")),
    20: (
        "MPEG command error (legacy)",
        _legacy("a broken command stream sent to the old MPEG engine"),
    ),
    21: (
        "Motion-estimation command error (legacy)",
        _legacy("a broken command stream sent to the motion-estimation engine"),
    ),
    22: (
        "Video processor command error (legacy)",
        _legacy("a broken command stream sent to the video processor"),
    ),
    23: (
        "RC logging enabled (legacy)",
        f"Old marker that robust-channel logging was on. {_RESERVED}",
    ),
    24: ("Semaphore timeout (legacy)", _legacy("a GPU semaphore wait that never completed")),
    25: (
        "Illegal notify request",
        "The graphics engine received an illegal notifier request in its command stream, "
        "normally produced by the application or CUDA stack. Restart the app and check it.",
    ),
    26: (
        "Framebuffer interface timeout (legacy)",
        _legacy("a timeout waiting on the framebuffer interface"),
    ),
    27: ("VP engine exception (legacy)", _legacy("an exception in the old video processor (VP)")),
    28: (
        "VP2 engine exception (legacy)",
        _legacy("an exception in the second-generation video processor (VP2)"),
    ),
    29: (
        "BSP decoder exception (legacy)",
        _legacy("an exception in the bitstream (BSP) video decoder"),
    ),
    30: ("Semaphore bad address (legacy)", _legacy("a GPU semaphore access to an invalid address")),
    31: (
        "GPU MMU page fault",
        "A GPU engine used a virtual address that was unmapped or not permitted, so the "
        "memory management unit faulted. Usually a bad pointer in the application; faults "
        "repeating on one GPU across unrelated apps suggest hardware or driver trouble.",
    ),
    32: (
        "Push buffer DMA corruption",
        "The push-buffer DMA unit received damaged command data on its way to the GPU. "
        "Most often a PCIe signal-quality problem rather than a fault of the application.",
    ),
    33: ("SEC engine error (legacy)", _legacy("an error in an internal security micro-controller")),
    34: ("MSVLD decoder exception (legacy)", _legacy("an exception in the MSVLD video decoder")),
    35: ("MSPDEC decoder exception (legacy)", _legacy("an exception in the MSPDEC video decoder")),
    36: (
        "MSPPP post-processor exception (legacy)",
        _legacy("an exception in the MSPPP video post-processor"),
    ),
    37: (
        "FECS unimplemented method",
        "The graphics context-switch firmware (FECS) was asked for a method it does not "
        "implement. A driver or firmware issue; no action unless it recurs.",
    ),
    38: (
        "FECS watchdog timeout",
        "The watchdog guarding the graphics context-switch firmware (FECS) expired. "
        "Driver or firmware issue; report it if it recurs.",
    ),
    39: _ce(0),
    40: _ce(1),
    41: _ce(2),
    42: ("VIC exception (legacy)", _legacy("an exception in the video image compositor (VIC)")),
    43: (
        "Channel reset after a fault",
        "The driver reset the channel of an application that had just faulted, often right "
        "after Xid 13 or 31. The GPU stays usable; look at the earlier Xid.",
    ),
    44: (
        "Fault during context switch",
        "The graphics engine faulted while switching between contexts. A driver-side "
        "problem; report it if it happens again.",
    ),
    45: (
        "Channels torn down",
        "The driver removed an application's GPU channels because the process ended (kill, "
        "Ctrl-C, GPU reset) or as fallout of an earlier error. Harmless alone; otherwise "
        "follow the Xid named by 'caused by previous Xid' or logged just before.",
    ),
    46: (
        "GPU timeout",
        "The GPU as a whole stopped responding to work. Reset the GPU and report it if it "
        "happens again.",
    ),
    47: ("NVENC0 encoder error (legacy)", _legacy("an exception in video encoder 0")),
    48: (
        "Uncorrectable ECC error (DBE)",
        "GPU memory returned a double-bit error that ECC could not repair, and the "
        "affected applications fail. Drain and reset the GPU; together with Xid 63/64 "
        "follow the row-remapping guidance.",
    ),
    49: (
        "Slowdown level from registry (legacy)",
        f"Old power-management code for a fixed slowdown level. {_RESERVED}",
    ),
    50: (
        "Slowdown after channel error (legacy)",
        f"Old power-management code for a slowdown caused by a channel error. {_RESERVED}",
    ),
    51: (
        "Slowdown stress test failed (legacy)",
        f"Old power-management code for a failed slowdown stress test. {_RESERVED}",
    ),
    52: (
        "Slowdown for temperature rise (legacy)",
        f"Old power-management code for a slowdown as temperature rose. {_RESERVED}",
    ),
    53: (
        "Clocks reduced for temperature (legacy)",
        f"Old power-management code for clocks lowered by heat. {_RESERVED}",
    ),
    54: (
        "Auxiliary power missing",
        "The board's auxiliary power input is not delivering power, so the GPU cannot run "
        "normally. Check the power cables and how the card is seated.",
    ),
    55: (
        "Temperature read error (legacy)",
        f"Old code for a failed temperature sensor read. {_RESERVED}",
    ),
    56: ("Display channel exception (legacy)", _legacy("an exception in the display engine")),
    57: (
        "Memory link training failed (legacy)",
        _legacy("a failure while training the video memory interface"),
    ),
    58: (
        "Unstable memory interface (legacy)",
        _legacy("an unstable video memory interface (EDC errors)"),
    ),
    59: ("PMU error (legacy)", _legacy("an error inside the power-management micro-controller")),
    60: (
        "SEC2 engine exception",
        "The SEC2 engine (security and video support) raised an exception. Restart the "
        "application; look for a software cause if it repeats.",
    ),
    61: (
        "PMU breakpoint (legacy)",
        _legacy("a breakpoint or warning hit by an internal micro-controller"),
    ),
    62: (
        "PMU halted",
        "The power-management micro-controller inside the GPU stopped. Reset the GPU and "
        "escalate if it comes back.",
    ),
    63: (
        "Row remap / page retirement recorded",
        "After ECC errors the GPU stored a memory row for remapping (a page for retirement "
        "on older GPUs) in its InfoROM; it takes effect at the next GPU reset. On its own "
        "this is informational.",
    ),
    64: (
        "Row remap / page retirement failed",
        "The GPU could not store a row remap or page retirement, so a faulty memory "
        "location remains in use. Reset the GPU; repeated failures justify replacing it.",
    ),
    65: ("NVENC1 encoder error (legacy)", _legacy("an exception in video encoder 1")),
    66: (
        "FECS register access violation",
        "The context-switch firmware caught the driver touching a register it may not use. "
        "Driver issue; look for a software cause if it recurs.",
    ),
    67: (
        "FECS verification violation",
        "The context-switch firmware flagged an illegal access while verifying a request. "
        "Driver issue; report it if it recurs.",
    ),
    68: (
        "NVDEC0 video decoder error",
        "Video decoder 0 raised an exception, usually on bad input or a decoding bug. "
        "Restart the application; Kubernetes' device plugin keeps the GPU healthy for it.",
    ),
    69: (
        "Graphics class error",
        "The graphics engine got a method for an object class it does not accept, a sign "
        "that the application or its CUDA libraries sent broken commands. Restart the app "
        "and check it.",
    ),
    70: _ce(3),
    71: _ce(4),
    72: _ce(5),
    73: ("NVENC2 encoder error (legacy)", _legacy("an exception in video encoder 2")),
    74: (
        "Fatal NVLink error",
        "An NVLink of this GPU reported a fatal error; the GPU needs a reset or the node a "
        "reboot. The link, its cabling or the peer GPU/NVSwitch can be at fault; decode the "
        "register values printed in the message.",
    ),
    75: _ce(6),
    76: _ce(7),
    77: _ce(8),
    78: (
        "vGPU failed to start",
        "A virtual GPU could not start, usually because guest and host drivers do not match "
        "or the vGPU type is not supported. Bring software and firmware to a matching set.",
    ),
    79: (
        "GPU fell off the bus",
        "The driver lost contact with the GPU over PCIe and the GPU no longer answers. "
        "Reboot the node; check PCIe AER errors, power, cooling and the slot or riser, and "
        "request hardware support if it recurs.",
    ),
    80: (
        "Command data CRC mismatch",
        "Command data reaching the GPU failed its CRC check, so it was damaged in transit. "
        "Restart the app; repeated cases point at the PCIe path.",
    ),
    81: ("VGA subsystem error (legacy)", _legacy("an error in the VGA subsystem")),
    82: _nvjpg(0),
    83: _nvdec(1),
    84: _nvdec(2),
    85: _ce(9),
    86: (
        "OFA0 optical-flow engine error",
        "Optical-flow accelerator 0 raised an exception. Restart the application; escalate "
        "if it repeats.",
    ),
    87: (
        "Driver telemetry report (reserved)",
        f"Reserved for driver telemetry reports. {_RESERVED}",
    ),
    88: _nvdec(3),
    89: _nvdec(4),
    90: ("L2 cache error (reserved)", f"Reserved code tied to the L2 cache (LTC). {_RESERVED}"),
    91: ("Reserved code", f"Placeholder with no published meaning. {_RESERVED}"),
    92: (
        "High correctable ECC rate",
        "Single-bit ECC errors, which are repaired, are arriving at a high rate. Nothing to "
        "do right away; watch the trend and report it if it continues.",
    ),
    93: (
        "InfoROM wear limit exceeded",
        "The InfoROM has been written more often than its provisioned wear limit allows. "
        "Not fatal; the limit can be cleared with nvflash.",
    ),
    94: (
        "Memory error confined to one app",
        "An uncorrectable memory error was confined to one application, which has to "
        "restart; other work on the GPU continues. Reset the GPU when convenient.",
    ),
    95: (
        "Memory error not confined",
        "An uncorrectable memory error could not be confined and may affect every process "
        "on the GPU. Reset the GPU before restarting applications.",
    ),
    96: _nvdec(5),
    97: _nvdec(6),
    98: _nvdec(7),
    99: _nvjpg(1),
    100: _nvjpg(2),
    101: _nvjpg(3),
    102: _nvjpg(4),
    103: _nvjpg(5),
    104: _nvjpg(6),
    105: _nvjpg(7),
    106: (
        "SMBPBI test",
        "A test message sent over the out-of-band management interface (SMBPBI). No fault.",
    ),
    107: (
        "SMBPBI silent test message",
        "A silent test message over the out-of-band management interface. No fault.",
    ),
    108: (
        "NVLink remote translation error",
        "Newer drivers use this code for a failed address translation on the far side of "
        "an NVLink; the catalog still lists it as unused. Check the application's peer "
        "accesses if it appears.",
    ),
    109: (
        "Context switch timeout",
        "The GPU could not switch away from a context in time. NVIDIA's catalog asks for a "
        "GPU reset, while the device plugin (v0.18.0+) counts it as an application error.",
    ),
    110: (
        "Security fault",
        "The GPU detected a security fault, which usually means failing hardware. Undo "
        "recent hardware changes, cold-reset the GPU and contact the vendor if it stays.",
    ),
    111: ("Display bundle error (legacy)", _legacy("a display bundle error event")),
    112: ("Display supervisor error (legacy)", _legacy("a display supervisor error")),
    113: (
        "DisplayPort link training failed (legacy)",
        _legacy("a failed DisplayPort link training"),
    ),
    114: ("Display pipeline underflow (legacy)", _legacy("a display pipeline underflow")),
    115: ("Display core channel error (legacy)", _legacy("an error on the display core channel")),
    116: ("Display window channel error (legacy)", _legacy("an error on a display window channel")),
    117: (
        "Display cursor channel error (legacy)",
        _legacy("an error on the display cursor channel"),
    ),
    118: (
        "Display pixel pipeline error (legacy)",
        _legacy("an error in the display pixel pipeline"),
    ),
    119: (
        "GSP firmware request timed out",
        "The driver gave up waiting for the GPU System Processor firmware to answer a "
        "request. Reset the GPU (power-cycle the node if that fails) and investigate repeats.",
    ),
    120: (
        "GSP firmware error",
        "Firmware running on the GPU System Processor hit an error. Reset the GPU, and "
        "power-cycle the node if it persists.",
    ),
    121: (
        "C2C link corrected errors",
        "Corrected errors were seen on the chip-to-chip link to the Grace CPU. No impact "
        "now; a GPU reset during planned downtime retrains the link.",
    ),
    122: ("SPI PMU read failure (legacy)", _legacy("a failed read over the PMU's SPI interface")),
    123: ("SPI PMU write failure (legacy)", _legacy("a failed write over the PMU's SPI interface")),
    124: ("SPI PMU erase failure (legacy)", _legacy("a failed erase over the PMU's SPI interface")),
    125: ("InfoROM filesystem failure (legacy)", _legacy("a failure of the InfoROM filesystem")),
    126: _ce(10),
    127: _ce(11),
    128: _ce(12),
    129: _ce(13),
    130: _ce(14),
    131: _ce(15),
    132: _ce(16),
    133: _ce(17),
    134: _ce(18),
    135: _ce(19),
    136: (
        "NVLink training failed",
        "An NVLink did not come up during autonomous link training (Hopper). Reset the GPU "
        "and investigate the link's signal integrity.",
    ),
    137: (
        "Illegal NVLink peer access",
        "An application made a peer access over NVLink that it was not allowed to make, "
        "seen as an MMU fault on the far side. Debug it with compute-sanitizer or cuda-gdb.",
    ),
    138: ("DLA error (reserved)", f"Reserved for deep-learning accelerator errors. {_RESERVED}"),
    139: (
        "OFA1 optical-flow engine error",
        "Optical-flow accelerator 1 raised an exception. Restart the application; escalate "
        "if it repeats.",
    ),
    140: (
        "ECC error escaped recovery",
        "An uncorrectable ECC error got past the driver's usual handling (row remapping or "
        "page offlining). Reset the GPU and contact the vendor if it persists.",
    ),
    141: (
        "CUDA fast-path error",
        "The CUDA fast path reported an error. Nothing to do at once; report it if it recurs.",
    ),
    142: (
        "NVENC3 encoder error",
        "Video encoder 3 raised an error. NVIDIA's catalog asks for a support case straight away.",
    ),
    143: (
        "GPU initialisation failed",
        "The GPU did not finish initialising. Reset the GPU and escalate if it keeps failing.",
    ),
    144: _nvlink5(
        "SAW",
        "Decode the unit and status words in the message to decide between ignoring it "
        "and resetting the GPU.",
    ),
    145: _nvlink5(
        "RLW", "Many of its status values defer to the recovery action in the Xid 154 that follows."
    ),
    146: _nvlink5("TLW", "Decode the unit and status words in the message to choose the action."),
    147: _nvlink5("TREX", "Decode the unit and status words in the message to choose the action."),
    148: _nvlink5(
        "NVLPW control", "Decode the unit and status words in the message to choose the action."
    ),
    149: _nvlink5(
        "NETIR",
        "It also reports links going down; the status tells a peer-side, cabling or "
        "software-initiated cause apart.",
    ),
    150: _nvlink5("MSE", "These include its watchdog and are fatal; reset the GPU."),
    151: (
        "Key rotation failed",
        "Key rotation for confidential computing failed. Restart the VM that owns the GPU.",
    ),
    152: (
        "DLA SMMU fault",
        "Deep-learning accelerator SMMU error; data-centre GPUs do not have this unit.",
    ),
    153: (
        "DLA timeout",
        "Deep-learning accelerator timeout; data-centre GPUs do not have this unit.",
    ),
    154: (
        "Recovery action changed",
        "The driver states which recovery the GPU now needs (none, GPU reset, node reboot, "
        "drain, ...) after another Xid. Do what it names; it never appears alone.",
    ),
    155: (
        "NVLink taken down by software",
        "An NVLink was brought down on purpose by software, for example when entering "
        "sleep. Reset the GPU and find out who did it if that was not expected.",
    ),
    156: (
        "Resource retired",
        "The GPU retired an internal resource after errors. Reset the GPU so the change "
        "takes effect.",
    ),
    157: (
        "Resource retirement failed",
        "The GPU wanted to retire a resource but has no spare left. Work can continue, but "
        "the error may come back; report it.",
    ),
    158: (
        "Fatal GPU timeout",
        "The GPU hit a fatal timeout. Reset the GPU and report repeats.",
    ),
    159: (
        "CHI interconnect non-data error",
        "A non-data error on the coherent CHI interface, possible on any GPU attached over "
        "C2C. Reset the GPU only if UVM or vGPU is in use.",
    ),
    160: (
        "Memory channel retired",
        "A GPU memory channel was marked for repair after errors.",
    ),
    161: (
        "Memory channel retirement failed",
        "The GPU could not mark a faulty memory channel for repair.",
    ),
    162: ("Power smoothing back on", "The board's power-smoothing circuitry is working again."),
    163: (
        "Power smoothing off",
        "The power-smoothing circuitry switched itself off, for example after thermal events "
        "or a timeout, so power draw can swing.",
    ),
    164: (
        "Power smoothing near end of life",
        "The power-smoothing circuitry is close to the end of its rated life.",
    ),
    165: (
        "Power smoothing worn out",
        "The power-smoothing circuitry has used up its rated life; expect large swings in "
        "power draw.",
    ),
    166: (
        "NVLink traffic before encryption",
        "In confidential-computing mode, traffic crossed an NVLink before the link was set "
        "up for encryption.",
    ),
    167: (
        "PCIe fatal timeout",
        "A fatal timeout on the GPU's PCIe interface. NVIDIA gives no action yet; treat it "
        "like a failing PCIe link.",
    ),
    168: (
        "Reduced GPU memory (WPR errors)",
        "Errors in the write-protected memory region reduced the memory the GPU can offer. "
        "Seen with ECC turned off.",
    ),
    169: ("SEC2 halted", "The SEC2 micro-controller inside the GPU stopped."),
    170: (
        "NVLink security interrupt in CC mode",
        "An unexpected NVLink security interrupt arrived while in confidential-computing mode.",
    ),
    171: (
        "Uncorrectable DRAM error detail",
        "Companion record to Xid 48 saying the uncorrectable error was in DRAM (HBM).",
    ),
    172: (
        "Uncorrectable SRAM error detail",
        "Companion record to Xid 48 saying the uncorrectable error was in on-chip SRAM.",
    ),
    173: (
        "C2C link fatal failure",
        "Newer drivers define this for a fatal failure of the chip-to-chip link; NVIDIA has "
        "not published guidance yet.",
    ),
    174: (
        "Process killed silently on channel reset",
        "Newer drivers define this for a channel reset that ends the process without a "
        "report; no published guidance yet.",
    ),
    175: (
        "GPU memory subsystem error",
        "Newer drivers define this for an error in the GPU memory subsystem; no published "
        "guidance yet.",
    ),
    176: (
        "PCIe correctable-error fault",
        "Newer drivers define this for a fault raised from PCIe correctable errors; no "
        "published guidance yet.",
    ),
}


def _q(value: str) -> str:
    """A TOML basic string (JSON string escapes are valid TOML escapes)."""
    return json.dumps(value, ensure_ascii=False)


def render(entries: list[dict[str, object]]) -> str:
    out = [
        "# Xid catalog for gpu-triage. Generated by analyzers/data/gen_xid_toml.py; edit the",
        "# wording there. name/meaning are this project's words. category, action,",
        "# action_investigatory (NVIDIA's resolution buckets), applies_to, mnemonic and source",
        "# come from a JSON extract of NVIDIA's Xid catalog (described in that script).",
        "# app_error: skipped by the k8s device plugin.",
        "",
    ]
    for entry in sorted(entries, key=lambda e: int(str(e["xid"]))):
        number = int(str(entry["xid"]))
        name, meaning = TEXT[number]
        out.append(f"[xid.{number}]")
        out.append(f"name = {_q(name)}")
        out.append(f"meaning = {_q(meaning)}")
        out.append(f"category = {_q(str(entry['category']))}")
        out.append(f"action = {_q(str(entry['action']))}")
        investigatory = entry.get("action_investigatory")
        if isinstance(investigatory, str):
            out.append(f"action_investigatory = {_q(investigatory)}")
        out.append(f"app_error = {'true' if entry.get('app_error') else 'false'}")
        if number in APP_ERROR_SINCE:
            out.append(f"app_error_since = {_q(APP_ERROR_SINCE[number])}")
        applies = entry.get("applies_to")
        if isinstance(applies, dict):
            flags = ", ".join(
                f"{key} = {'true' if applies[key] else 'false'}"
                for key in ("A100", "H100", "B100", "GB200")
            )
            out.append(f"applies_to = {{ {flags} }}")
        mnemonic = entry.get("mnemonic")
        if isinstance(mnemonic, str):
            out.append(f"mnemonic = {_q(mnemonic)}")
        out.append(f"source = {_q(str(entry['source']))}")
        out.append("")
    return "\n".join(out)


# Keys of an extract entry whose text is NVIDIA's wording, not to be repeated in ours.
THEIR_WORDING = ("name", "notes", "legacy_name", "app_error_note", "mnemonic")
_COPIED_RUN = 6  # this many words in a row, taken from the extract's notes, count as copied


def load(source: Path) -> list[dict[str, Any]]:
    entries = json.loads(source.read_text(encoding="utf-8"))
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SystemExit(f"{source}: expected a JSON list of objects, one per Xid")
    return entries


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def copied_wording(number: int, entry: dict[str, Any]) -> list[str]:
    """Where the name or meaning of ``number`` in ``TEXT`` repeats the extract's text."""
    name, meaning = TEXT[number]
    found = []
    for key in THEIR_WORDING:
        theirs = entry.get(key)
        if not isinstance(theirs, str) or not theirs.strip():
            continue
        for label, ours in (("name", name), ("meaning", meaning)):
            if ours.strip().lower() == theirs.strip().lower():
                found.append(f"Xid {number}: our {label} is the extract's {key}")
    ours_joined = " ".join(_words(meaning))
    notes = _words(entry.get("notes") or "")
    for start in range(len(notes) - _COPIED_RUN + 1):
        run = " ".join(notes[start:start + _COPIED_RUN])
        if run in ours_joined:
            found.append(f"Xid {number}: our meaning repeats the extract's notes: {run!r}")
            break
    return found


def check(entries: list[dict[str, Any]], committed: str) -> list[str]:
    """Every difference between ``committed`` (the text of xid.toml) and what ``entries``
    give; empty when the catalog is up to date and its wording is its own."""
    numbers = sorted(int(str(e["xid"])) for e in entries)
    missing = [n for n in numbers if n not in TEXT]
    if missing:
        return [f"no wording in TEXT for Xid {missing}"]
    problems: list[str] = []
    wanted = tomllib.loads(render(entries))["xid"]
    have = tomllib.loads(committed).get("xid", {})
    for key in sorted(set(wanted) | set(have), key=int):
        if key not in have:
            problems.append(f"Xid {key}: in the extract, not in xid.toml")
        elif key not in wanted:
            problems.append(f"Xid {key}: in xid.toml, not in the extract")
        else:
            for field in sorted(set(wanted[key]) | set(have[key])):
                if wanted[key].get(field) != have[key].get(field):
                    problems.append(f"Xid {key}: {field} is {have[key].get(field)!r} in "
                                    f"xid.toml, {wanted[key].get(field)!r} from the extract")
    if not problems and render(entries) != committed:
        problems.append("xid.toml is not formatted as this script writes it")
    for entry in entries:
        problems.extend(copied_wording(int(str(entry["xid"])), entry))
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python analyzers/data/gen_xid_toml.py",
        description="Write xid.toml from a JSON extract of NVIDIA's Xid catalog, or check it.")
    parser.add_argument("source", metavar="XID_JSON", type=Path,
                        help="the extract: a JSON list of one object per Xid")
    parser.add_argument("--check", action="store_true",
                        help="compare xid.toml with the extract; change nothing; exit 1 on "
                             "any difference")
    args = parser.parse_args(argv)
    entries = load(args.source)
    if args.check:
        problems = check(entries, TARGET.read_text(encoding="utf-8"))
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print(f"{len(problems)} difference(s); to take the extract's identifiers, run "
                  f"without --check", file=sys.stderr)
            return 1
        print(f"xid.toml matches {args.source} ({len(entries)} Xids)")
        return 0
    missing = sorted({int(str(e["xid"])) for e in entries} - TEXT.keys())
    if missing:
        raise SystemExit(f"no wording for Xid {missing}")
    TARGET.write_text(render(entries), encoding="utf-8")
    from analyzers import datafiles  # the installed package: its twin of xid.toml

    datafiles.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
