"""DRV011: NVSwitch SXid errors per node and switch, and SXid parsing.

Kernel lines from real public sources:
- SXid 22013 (safe to ignore) with its Data/Severity lines, an HGX H100 booting under TDX:
  https://github.com/NVIDIA/nvtrust/issues/124
- SXid 12028 printed with ``dmesg -x --time-format iso``, only its Data line collected:
  https://github.com/leptonai/gpud/pull/338
- Xid 79 followed by fatal SXid 20034 on three switches (an HGX node losing a GPU):
  https://github.com/leptonai/gpud/blob/4a8de33a3f02e207f39e9023d67125592d599731/components/accelerator/nvidia/sxid/README.md
- ``nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM Fault Up`` and
  ``... 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)``: the examples in
  gpud's sxid/kmsg.go (same commit), after the Fabric Manager User Guide's SXid tables;
  the Xid 74 wording is the one tests/test_kernel.py quotes.
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit import verdict as status
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node, smi_gpu, smi_xml

from bundle.kernel import KernelLine, parse_sxid

NVTRUST = (
    "[   38.174242] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.195.03  "
    "Release Build  (dvs-builder@U22-I3-H04-03-1)  Sat Sep 20 00:47:16 UTC 2025\n"
    "[   38.175561] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b, "
    "0x0000002b, 0x00000000, 0x0000002b, 0x80005302, 0x00000000, 0x00000000, 0x00000000, "
    "0x00000000}\n"
    "[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 "
    "Minion Link DLREQ interrupt\n"
    "[   38.180708] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine "
    "instance 44 Sub-engine instance 00\n"
    "[   38.183583] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002c, "
    "0x0000002c, 0x00000000, 0x0000002c, 0x80005302, 0x00000000, 0x00000000, 0x00000000, "
    "0x00000000}\n"
    "[   38.187830] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 45 "
    "Minion Link DLREQ interrupt\n"
    "[   38.189818] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine "
    "instance 45 Sub-engine instance 00\n"
)
GPUD_338 = (
    "kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid "
    "(PCI:0000:84:00.0): 12028, Data {0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, "
    "0x00000000, 0x40008000, 0x5a001100, 0x00000000, 0x00000000}\n"
)
GPUD_README = (
    "[6781741.548768] NVRM: GPU at PCI:0000:91:00: GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b\n"
    "[6781741.548776] NVRM: GPU Board Serial Number: 1653723052734\n"
    "[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU "
    "has fallen off the bus.\n"
    "[6781741.548783] NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.\n"
    "[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM "
    "Fault Up\n"
    "[6781753.404587] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 63 LTSSM "
    "Fault Up\n"
    "[6781753.404848] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine "
    "instance 60 Sub-engine instance 00\n"
    "[6781753.406566] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Data {0x10000000, "
    "0x10000000, 0x00000000, 0x10000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, "
    "0x00000000}\n"
    "[6781753.407899] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 37 LTSSM "
    "Fault Up\n"
    "[6781753.408138] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 62 LTSSM "
    "Fault Up\n"
)
FATAL_WITH_XID74 = (
    "[131453.740743] nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM "
    "Fault Up\n"
    "[131453.812004] NVRM: Xid (PCI:0000:18:00): 74, pid='<unknown>', name=<unknown>, NVLink: "
    "fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n"
)


def _line(message: str) -> KernelLine:
    return KernelLine(path="dmesg.txt", line=1, raw=message, message=message, time=None,
                      uptime=None)


def test_parse_sxid_first_and_detail_lines() -> None:
    first = parse_sxid(_line("nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, "
                             "Link 32 egress non-posted PRIV error (First)"))
    assert first is not None
    assert (first.sxid, first.switch, first.pci, first.severity, first.link) == \
        (12028, "nvidia-nvswitch3", "0000:05:00.0", "non-fatal", 32)
    assert first.detail == "Link 32 egress non-posted PRIV error (First)"
    detail = parse_sxid(_line("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 "
                              "Engine instance 60 Sub-engine instance 00"))
    assert detail is not None
    assert (detail.sxid, detail.severity, detail.link) == (20034, None, None)
    # a GPU Xid is not an SXid
    assert parse_sxid(_line("NVRM: Xid (PCI:0000:18:00): 74, NVLink: fatal error")) is None


def test_ignorable_sxid_is_info(tmp_path: Path) -> None:
    """nvtrust#124: 22013 at boot, safe to ignore."""
    report = analyse(drv_files([gpu_node("hgx-1")], {"nodes/hgx-1/dmesg.txt": NVTRUST}),
                     tmp=tmp_path)
    found = of(report, "DRV011")
    assert sorted(found) == ["DRV011:hgx-1/0000:04:00.0"]
    op = found["DRV011:hgx-1/0000:04:00.0"]
    assert op.severity.value == "info"
    assert ("nvidia-nvswitch3 (0000:04:00.0) reported 2 SXid error(s) (38 s after boot) on "
            "link(s) 44, 45: SXid 22013 (Minion Link DLREQ interrupt, non-fatal) x2") in op.summary
    assert [(e.path, e.line) for e in op.evidence] == [("nodes/hgx-1/dmesg.txt", 3),
                                                        ("nodes/hgx-1/dmesg.txt", 6)]
    assert "kubectl cordon" not in op.remediation
    assert op.causes == []


def test_data_line_only_in_iso_dmesg(tmp_path: Path) -> None:
    """gpud#338: only the Data line of SXid 12028, in --time-format iso."""
    report = analyse(drv_files([gpu_node("hgx-2")], {"nodes/hgx-2/dmesg.txt": GPUD_338}),
                     tmp=tmp_path)
    op = of(report, "DRV011")["DRV011:hgx-2/0000:84:00.0"]
    assert op.severity.value == "high"
    assert "SXid 12028 (egress nonposted PRIV error, non-fatal) x1" in op.summary
    assert "2025-01-25T10:34:54Z" in op.summary
    assert [(e.path, e.line) for e in op.evidence] == [("nodes/hgx-2/dmesg.txt", 1)]
    assert "kubectl cordon hgx-2" in op.remediation


def test_fatal_sxids_on_three_switches_do_not_claim_the_xid_79(tmp_path: Path) -> None:
    """gpud's README: Xid 79 (GPU fell off the bus), then 20034 on the switches' links to
    it. The links went down because the GPU did: the SXids do not explain the Xid 79."""
    report = analyse(drv_files([gpu_node("hgx-3")], {"nodes/hgx-3/dmesg.txt": GPUD_README}),
                     tmp=tmp_path)
    found = of(report, "DRV011")
    assert sorted(found) == ["DRV011:hgx-3/0000:05:00.0", "DRV011:hgx-3/0000:06:00.0",
                             "DRV011:hgx-3/0000:07:00.0"]
    switch0 = found["DRV011:hgx-3/0000:05:00.0"]
    assert switch0.severity.value == "high"
    assert "on link(s) 62, 63: SXid 20034 (LTSSM Fault Up, fatal) x2" in switch0.summary
    assert [(e.path, e.line) for e in switch0.evidence] == [("nodes/hgx-3/dmesg.txt", 6),
                                                             ("nodes/hgx-3/dmesg.txt", 10)]
    assert all(f.causes == [] for f in found.values())
    assert "DRV001:hgx-3/0000:91:00.0" in of(report, "DRV001")


def test_fatal_sxid_explains_the_xid_74_and_the_fabric(tmp_path: Path) -> None:
    """A fatal SXid reaches the GPU as Xid 74 (Fabric Manager User Guide); the fabric
    then shows the GPU not registered (OP005)."""
    fabric = "\t\t<fabric>\n\t\t\t<state>In Progress</state>\n\t\t\t<status>N/A</status>\n" \
             "\t\t</fabric>\n"
    smi = smi_xml(smi_gpu("00000000:18:00.0", "GPU-4b1c2a3e-0000-1111-2222-333344445555",
                          extra=fabric))
    report = analyse(drv_files([gpu_node("hgx-4")], {"nodes/hgx-4/dmesg.txt": FATAL_WITH_XID74,
                                                    "nodes/hgx-4/nvidia-smi.xml": smi}),
                     tmp=tmp_path)
    op = of(report, "DRV011")["DRV011:hgx-4/0000:00:00.0"]
    assert op.causes == ["DRV001:hgx-4/0000:18:00.0", "OP005:hgx-4"]
    assert "The GPUs report it too: 0000:18:00.0" in op.summary
    assert "see OP005" in op.summary
    xid = of(report, "DRV001")["DRV001:hgx-4/0000:18:00.0"]
    assert "DRV011:hgx-4/0000:00:00.0" in xid.caused_by
    assert "DRV011:hgx-4/0000:00:00.0" in of(report, "OP005")["OP005:hgx-4"].caused_by


def test_quiet_without_sxid_lines(tmp_path: Path) -> None:
    dmesg = ("[131453.812004] NVRM: Xid (PCI:0000:18:00): 74, pid='<unknown>', "
             "name=<unknown>, NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, "
             "0x0, 0x0, 0x0)\n")
    report = analyse(drv_files([gpu_node("hgx-5")], {"nodes/hgx-5/dmesg.txt": dmesg}), tmp=tmp_path)
    assert of(report, "DRV011") == {}
    assert status(report, "DRV011") == ("passed", None)
    assert not any(link.startswith("DRV011") for link in
                   of(report, "DRV001")["DRV001:hgx-5/0000:18:00.0"].caused_by)
