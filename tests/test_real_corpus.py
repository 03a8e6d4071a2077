"""The real-artifact corpus (tests/fixtures/real, sources in SOURCES.md there) read by the
parsers and the analysis: every value asserted was read from the files by hand.

Each artefact is also analysed inside a one-node bundle: it must add no recorded problem,
no rule in error, and no finding beyond those it really shows (a bundle without the file
gives the baseline). What the code gets wrong today is marked ``xfail(strict=True)`` with
its diagnosis, so fixing it turns the test into a failure that asks for the mark to go.

Kernel-log quotations from GitHub threads are test wording here, each with its address.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kit import analyse
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node
from layouts_kit import tar

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Report
from bundle import nvsmi_health as health
from bundle import open_bundle
from bundle.kernel import KernelLine, XidEvent, parse_dmesg, parse_xid, scan_signals
from bundle.nvsmi import parse_nvidia_smi

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
XML = REAL / "smi" / "xml"
TEXT = REAL / "smi" / "text"
KERNEL = REAL / "kernel"
TROUBLESHOOT = REAL / "troubleshoot"


# ------------------------------------------------------------------------------ corpus


def test_sources_md_names_every_file_and_nothing_else() -> None:
    listed = set(re.findall(r"^\| `([^`]+)` \|", (REAL / "SOURCES.md").read_text(), re.M))
    present = {p.relative_to(REAL) for p in REAL.rglob("*") if p.is_file()}
    present.discard(Path("SOURCES.md"))
    by_name = {p.name if p.parts[0] != "troubleshoot" else str(Path(*p.parts[2:]))
               for p in present}
    assert by_name == listed


def test_the_corpus_stays_small() -> None:
    assert sum(p.stat().st_size for p in REAL.rglob("*") if p.is_file()) < 250_000


# ---------------------------------------------------------------------- analysis helper


def extra_findings(tmp_path: Path, path: str, data: bytes, gpus: int) -> tuple[
        set[str], Report]:
    """Findings of a one-node bundle holding ``data`` at ``path`` that the same bundle
    without it does not have, and the report."""
    node = [gpu_node("gpu-a", capacity=gpus)]
    with_file = analyse(drv_files(node, {path: data}), tmp=tmp_path / "with")
    without = analyse(drv_files(node, {}), tmp=tmp_path / "without")
    return ({f.id for f in with_file.findings} - {f.id for f in without.findings}, with_file)


def assert_clean(report: Report) -> None:
    assert [(p.path, p.message) for p in report.problems] == []
    assert [r.rule_id for r in report.rules if r.status.value == "error"] == []


# ------------------------------------------------------------------- nvidia-smi -q -x

XML_FACTS = {
    # file: (driver, CUDA, [(bus id, UUID, product, brand, minor, FB total, FB used,
    #        GPU util, [(pid, process name, used MiB)])])
    "a100-sxm4-80gb_r535_mig.xml": ("535.54.03", "12.2", [(
        "00000000:01:00.0", "GPU-513536b6-7d19-9063-b049-1e69664bb298",
        "NVIDIA A100-SXM4-80GB", "NVIDIA", 1, 81920, 50, None, [])]),
    "tesla-t4_r515.xml": ("515.105.01", "11.7", [(
        "00000000:00:1E.0", "GPU-d37e67a5-91dd-3774-a5cb-99096249601a", "Tesla T4",
        "NVIDIA", 0, 15360, 1032, 0,
        [(675, "/usr/lib/xorg/Xorg", 22), (5762, "python", 1005)])]),
    "grid-p4-1q_r513_vgpu-windows.xml": ("513.46", "11.6", [(
        "00000000:00:0B.0", "GPU-1b1ea7c7-1c4b-ed49-1c72-26c65f2dd207", "GRID P4-1Q",
        "NVIDIA RTX Virtual Workstation", None, 1024, 807, 0,
        [(pid, "", None) for pid in (1188, 2124, 3696, 3972, 7208, 7284, 7880, 8788, 9468,
                                     9804, 11528, 12804)]
        + [(15104, "C:\\Windows\\explorer.exe", None)])]),
    "gtx-1660-ti_r418.xml": ("418.43", "10.1", [(
        "00000000:43:00.0", "GPU-304a277d-3545-63b8-3a36-dfde3c992989", "Graphics Device",
        "GeForce", 0, 5912, 0, 0, [])]),
    "rtx-3060_r570.xml": ("570.124.04", "12.8", [(
        "00000000:2D:00.0", "GPU-d6889ff6-2523-9142-ca3c-1ca3f396a625",
        "NVIDIA GeForce RTX 3060", "GeForce", 0, 12288, 116, 0, [])]),
    "rtx-a5000-x2_r590_trimmed.xml": ("590.44.01", "13.1", [
        ("00000000:81:00.0", "GPU-12345678-aaaa-bbbb-cccc-0123456789ab", "NVIDIA RTX A5000",
         "NVIDIA RTX", 1, 24564, 22437, 0,
         [(100477, "/root/src/llama.cpp/build/bin/llama-server", 22430)]),
        ("00000000:C1:00.0", "GPU-12345678-aaaa-bbbb-cccc-0123456789cd", "NVIDIA RTX A5000",
         "NVIDIA RTX", 0, 24564, 17253, 0,
         [(100477, "/root/src/llama.cpp/build/bin/llama-server", 17246)])]),
    "rtx-pro-6000-blackwell_r590_trimmed.xml": ("590.44.01", "13.1", [(
        "00000000:61:00.0", "GPU-12345678-aaaa-bbbb-cccc-0123456789ab",
        "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "NVIDIA RTX", 0,
        97887, 65720, 0, [(116860, "/root/src/llama.cpp/build/bin/llama-server", 65710)])]),
}

XML_READINGS = {
    # file: (power draw and limit, temperature, selected raw readings as printed)
    "a100-sxm4-80gb_r535_mig.xml": (("67.03 W", "500.00 W"), "27 C", {
        "mig_mode/current_mig": "Enabled", "remapped_rows": "N/A",
        "ecc_errors/volatile/dram_uncorrectable": "0",
        "ecc_errors/aggregate/sram_uncorrectable": "0",
        "gpu_reset_status/reset_required": "No", "fabric/state": "N/A"}),
    "tesla-t4_r515.xml": (("26.78 W", "70.00 W"), "40 C", {
        "ecc_mode/current_ecc": "Enabled", "remapped_rows": "N/A",
        "retired_pages/pending_blacklist": "No", "retired_pages/pending_retirement": "No",
        "retired_pages/double_bit_retirement/retired_count": "0",
        "clocks_throttle_reasons/clocks_throttle_reason_hw_slowdown": "Not Active"}),
    "grid-p4-1q_r513_vgpu-windows.xml": ((None, None), "0 C", {
        "clocks_throttle_reasons": "N/A", "ecc_mode/current_ecc": "N/A",
        "ecc_errors/volatile/double_bit/total": "N/A", "remapped_rows": "N/A",
        "gpu_virtualization_mode/virtualization_mode": "VGPU"}),
    "gtx-1660-ti_r418.xml": (("8.93 W", "130.00 W"), "40 C", {
        "retired_pages/pending_retirement": "N/A", "remapped_rows": "",
        "clocks_throttle_reasons/clocks_throttle_reason_gpu_idle": "Active"}),
    "rtx-3060_r570.xml": (("11.63 W", "170.00 W"), "42 C", {
        "gpu_reset_status/reset_required": "Requested functionality has been deprecated",
        "gpu_recovery_action": "None", "remapped_rows": "N/A",
        "gpu_power_readings/average_power_draw": "11.60 W"}),
    "rtx-a5000-x2_r590_trimmed.xml": (("6.52 W", "230.00 W"), "13 C", {
        "ecc_mode/current_ecc": "Disabled", "remapped_rows/remapped_row_pending": "No",
        "remapped_rows/row_remapper_histogram/row_remapper_histogram_max": "192 bank(s)",
        "gpu_recovery_action": "None"}),
    "rtx-pro-6000-blackwell_r590_trimmed.xml": (("3.99 W", "300.00 W"), "24 C", {
        "gpu_recovery_action": "None", "ecc_mode/current_ecc": "Disabled",
        "ecc_errors/channel_repair_pending": "No", "ecc_errors/tpc_repair_pending": "No",
        "remapped_rows/remapped_row_pending": "No", "remapped_rows/remapped_row_unc": "0",
        "remapped_rows/row_remapper_histogram/row_remapper_histogram_max": "512 bank(s)",
        "clocks_event_reasons/clocks_event_reason_sw_thermal_slowdown": "Not Active"}),
}


def test_every_xml_of_the_corpus_is_in_the_facts_table() -> None:
    assert sorted(p.name for p in XML.glob("*.xml")) == sorted(XML_FACTS)


@pytest.mark.parametrize("name", sorted(XML_FACTS))
def test_xml_gives_the_gpu_facts_read_by_hand(name: str) -> None:
    smi = parse_nvidia_smi((XML / name).read_bytes())
    driver, cuda, gpus = XML_FACTS[name]
    assert (smi.driver_version, smi.cuda_version) == (driver, cuda)
    assert [(g.bus_id, g.uuid, g.product_name, g.product_brand, g.minor_number,
             g.fb_total_mib, g.fb_used_mib, g.gpu_util_percent,
             [(p.pid, p.name, p.used_memory_mib) for p in g.processes])
            for g in smi.gpus] == [tuple(gpu) for gpu in gpus]


@pytest.mark.parametrize("name", sorted(XML_FACTS))
def test_xml_health_readings_are_as_printed_and_raise_nothing(name: str) -> None:
    gpus = parse_nvidia_smi((XML / name).read_bytes()).gpus
    first = gpus[0].element  # the readings table is of the first GPU
    power, temperature, raw = XML_READINGS[name]
    assert health.power(first) == power
    assert health.temperature(first) == temperature
    assert {path: (first.findtext(path) or "").strip() for path in raw} == raw
    for element in (gpu.element for gpu in gpus):  # healthy GPUs: no reader reports trouble
        assert health.ecc_uncorrectable(element, "volatile") == []
        assert health.ecc_uncorrectable(element, "aggregate") == []
        assert health.sram_threshold_exceeded(element) is None
        assert health.retired_pages(element) == []
        assert health.remapped_rows(element) == health.RowRemap(None, None, None)
        assert health.repairs_pending(element) == []
        assert health.recovery(element) == []
        assert health.fabric(element).healthy
        assert health.active_slowdowns(element) == []


def test_locate_finds_a_reading_inside_the_right_gpu_of_a_two_gpu_file() -> None:
    text = (XML / "rtx-a5000-x2_r590_trimmed.xml").read_text()
    path = "remapped_rows/remapped_row_pending"
    line = "<remapped_row_pending>No</remapped_row_pending>"
    assert health.locate(text, "00000000:81:00.0", path) == (213, line)
    assert health.locate(text, "00000000:C1:00.0", path) == (542, line)


# Findings an XML really supports: GeForce cards are outside the GPU Operator's list.
XML_FINDINGS = {"gtx-1660-ti_r418.xml": {"CFG002:gpu-a"}, "rtx-3060_r570.xml": {"CFG002:gpu-a"}}


@pytest.mark.parametrize("name", sorted(XML_FACTS))
def test_xml_in_a_bundle_adds_no_problem_and_only_its_real_findings(
        tmp_path: Path, name: str) -> None:
    extra, report = extra_findings(tmp_path, "nodes/gpu-a/nvidia-smi.xml",
                                   (XML / name).read_bytes(), gpus=len(XML_FACTS[name][2]))
    assert_clean(report)
    assert extra == XML_FINDINGS.get(name, set())


# --------------------------------------------------------------------- nvidia-smi -q

TEXT_GPUS = {"a10_r550.txt": 1, "a100-sxm4-40gb-x8_r460.txt": 8}


def test_every_text_output_of_the_corpus_is_listed() -> None:
    assert sorted(p.name for p in TEXT.glob("*.txt")) == sorted(TEXT_GPUS)


@pytest.mark.parametrize("name", sorted(TEXT_GPUS))
def test_text_output_saved_as_the_xml_is_read_as_text(tmp_path: Path, name: str) -> None:
    data = (TEXT / name).read_bytes()
    path = tmp_path / "b"
    analyse(drv_files([gpu_node("gpu-a", capacity=TEXT_GPUS[name])],
           {"nodes/gpu-a/nvidia-smi.xml": data}), tmp=path)
    with open_bundle(path / "bundle") as opened:
        smi = opened.node("gpu-a").nvidia_smi
        assert smi is not None and len(smi.gpus) == TEXT_GPUS[name]
        problems = [(p.path, p.message) for p in opened.problems]
    assert problems == []


# ----------------------------------------------------------------------------- kernel


def xids(lines: list[KernelLine]) -> list[tuple[int, int, str | None, int | None, str | None]]:
    events = [(line.line, parse_xid(line)) for line in lines]
    return [(number, e.xid, e.pci, e.pid, e.process) for number, e in events
            if isinstance(e, XidEvent)]


def signals(lines: list[KernelLine]) -> list[tuple[int, str, str | None, str]]:
    return [(line.line, s.kind, s.pci, s.detail) for line in lines for s in scan_signals(line)]


GSP = "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function "


def test_dmesg_T_xid119_gsp_timeouts_on_an_xe9680() -> None:
    lines = parse_dmesg((KERNEL / "dmesg-T_xid119-gsp_h100-xe9680.log").read_text(), "k")
    assert len(lines) == 43
    assert (lines[0].time, lines[0].uptime) == (datetime(2025, 2, 23, 16, 24, 18, tzinfo=UTC),
                                                None)
    pci = "0000:9b:00.0"
    assert xids(lines) == [
        (3, 119, pci, 2024380, "nvidia-smi"), (38, 119, pci, 2024380, "nvidia-smi"),
        (40, 119, pci, 2024380, "nvidia-smi"), (42, 119, pci, 1263500, "cache_mgr_main"),
        (43, 119, pci, 1240590, "gpud")]
    first = parse_xid(lines[2])
    assert first is not None
    assert first.detail == GSP + "103 (GSP_RM_ALLOC) (0x2081 0x4)."
    assert signals(lines) == [
        (4, "gsp", None, "GPU4 GSP RPC buffer contains function 103 (GSP_RM_ALLOC) and data "
                         "0x0000000000002081 0x0000000000000004."),
        (5, "gsp", None, "GPU4 RPC history (CPU -> GSP):")]


def test_dmesg_x_iso_xid13_and_xid43_events() -> None:
    lines = parse_dmesg((KERNEL / "dmesg-x-iso_xid13-43_trimmed.log").read_text(), "k")
    assert len(lines) == 17
    assert xids(lines) == [(n, 13, "0000:38:00.0", None, None) for n in range(1, 17)] + [
        (17, 43, "0000:38:00.0", 2924364, "pt_main_thread")]
    assert signals(lines) == []


def test_dmesg_x_iso_records_carry_their_time() -> None:
    lines = parse_dmesg((KERNEL / "dmesg-x-iso_xid13-43_trimmed.log").read_text(), "k")
    assert lines[0].time == datetime(2025, 1, 21, 4, 41, 44, 283302, tzinfo=UTC)
    assert lines[16].message.startswith("NVRM: Xid (PCI:0000:38:00): 43,")


def test_dmesg_r_driver_load_records() -> None:
    lines = parse_dmesg((KERNEL / "dmesg-r_driver-load-r550_excerpt.log").read_text(), "k")
    assert len(lines) == 24
    assert (lines[0].uptime, lines[0].message) == (
        1126.588387, "nvidia: loading out-of-tree module taints kernel.")
    assert (lines[5].line, lines[5].uptime, lines[5].message) == (6, 1126.627862, "")
    assert xids(lines) == []
    assert signals(lines) == [
        (4, "module_verification", None,
         "nvidia: signature and/or required key missing - tainting kernel"),
        (8, "driver_loaded", None, "proprietary 550.144.03"),
        (19, "driver_loaded", None, "proprietary 550.144.03")]


def test_raw_kmsg_records_of_an_hgx_node() -> None:
    lines = parse_dmesg((KERNEL / "kmsg-raw_nvswitch-hgx.log").read_text(), "k")
    assert len(lines) == 47
    assert (lines[0].uptime, lines[0].message) == (
        206.764307, "nvidia-nvswitch2: open (major=510)")
    assert (lines[-1].uptime, lines[-1].message) == (
        57631.398464, "IPv6: ADDRCONF(NETDEV_CHANGE): calic24dd7712a6: link becomes ready")
    assert xids(lines) == [] and signals(lines) == []


KERNEL_FINDINGS = {
    "dmesg-T_xid119-gsp_h100-xe9680.log": {"DRV001:gpu-a/0000:9b:00.0"},
    "dmesg-x-iso_xid13-43_trimmed.log": {"DRV001:gpu-a/0000:38:00.0"},
    "dmesg-r_driver-load-r550_excerpt.log": set(),
    "kmsg-raw_nvswitch-hgx.log": set(),
}


def test_every_kernel_log_of_the_corpus_is_listed() -> None:
    assert sorted(p.name for p in KERNEL.glob("*.log")) == sorted(KERNEL_FINDINGS)


@pytest.mark.parametrize("name", sorted(KERNEL_FINDINGS))
def test_kernel_log_in_a_bundle_adds_only_its_real_findings(tmp_path: Path, name: str) -> None:
    extra, report = extra_findings(tmp_path, "nodes/gpu-a/dmesg.txt",
                                   (KERNEL / name).read_bytes(), gpus=8)
    assert_clean(report)
    assert extra == KERNEL_FINDINGS[name]


# Quotations from GitHub threads (test wording; the address says where each is from).

FALLEN_OFF = (  # https://github.com/NVIDIA/NVSentinel/issues/155
    "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
    "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
    "               NVRM: fallen off the bus and is not responding to commands.\n"
    "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
    "[ 1843.439669] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  "
    "Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025\n")

TALOS_GSP_INIT = (  # https://github.com/siderolabs/extensions/issues/909 (Talos 1.11.5)
    "[   14.395582] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.172.08  "
    "Release Build  (dvs-builder@U22-I3-AF01-21-3)  Tue Jul  8 18:08:21 UTC 2025\n"
    "[   18.315451] NVRM: _kgspProcessRpcEvent: Attempted to process RPC event from GPU0: "
    "0x1022 (RECOVERY_ACTION) during bootup without API lock\n"
    "[   22.343364] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM\n"
    "[   22.364786] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x65:1859)\n"
    "[   22.372784] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0\n")

SYSLOG_INIT = (  # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1151
    "May 27 16:50:10 fedora kernel: NVRM: GPU 0000:09:00.0: rm_init_adapter failed, "
    "device minor number 0\n"
    "May 27 16:50:10 fedora kernel: NVRM: osInitNvMapping: *** Cannot attach gpu\n"
    "May 27 16:50:10 fedora kernel: NVRM: GPU 0000:09:00.0: RmInitAdapter failed! "
    "(0x22:0x56:894)\n")

JOURNAL_CAUSED_BY = (  # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150
    "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 "
    "caused by previous Xid 149\n"
    "kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c "
    "caused by previous Xid 145\n")

DMESG_T_XIDS = (  # https://github.com/akash-network/support/issues/244
    "[Sun Jul 28 09:15:27 2024] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  "
    "Sun May 12 19:39:15 UTC 2024\n"
    "[Wed Jul 31 23:14:18 2024] NVRM: GPU at PCI:0000:00:05: "
    "GPU-efbdfde9-5798-a6e7-4c46-12518fa15375\n"
    "[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:00:05): 43, pid=1045242, "
    "name=pt_main_thread, Ch 00000008\n"
    "[Mon Aug  5 03:54:13 2024] NVRM: Xid (PCI:0000:00:07): 31, pid=2512125, "
    "name=python3.10, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS "
    "GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault is of type FAULT_PDE "
    "ACCESS_TYPE_VIRT_WRITE\n"
    "[Fri Aug  9 13:32:56 2024] NVRM: Xid (PCI:0000:00:08): 94, pid='<unknown>', "
    "name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No\n")

TALOS_PREFIX = (  # https://github.com/talos-rpi5/talos-builder/issues/11 (talosctl dmesg)
    "mc-pt1-pkp-srv-1a: kern: warning: [2025-09-13T20:46:45.810476849Z]: CPU: 2 UID: 0 "
    "PID: 2528 Comm: init Not tainted 6.12.25-talos #1\n"
    "mc-pt1-pkp-srv-1a: kern: warning: [2025-09-13T20:46:45.810482849Z]: Call trace:\n")


def test_multi_line_fallen_off_the_bus_is_one_record_with_its_pci_address() -> None:
    lines = parse_dmesg(FALLEN_OFF, "k")
    assert [(line.line, line.uptime) for line in lines] == [
        (1, 1843.308145), (4, 1843.439662), (5, 1843.439669)]
    assert lines[0].message == (
        "NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system "
        "has fallen off the bus and is not responding to commands.")
    assert signals(lines) == [
        (1, "fallen_off_bus", "0000:b3:00.0", "GPU was unreachable when the driver probed it"),
        (4, "probe_failed", None, "The NVIDIA probe routine failed for 1 device(s)."),
        (5, "driver_loaded", None, "open 570.158.01")]


def test_reltime_dmesg_keeps_the_multi_line_record_whole() -> None:
    # The NVSentinel record above as util-linux `dmesg -H` prints it (stamps rewritten by
    # hand to the --reltime shape; a real -H capture of such a record is in test_kernel.py).
    reltime = FALLEN_OFF.replace("[ 1843.308145]", "[Oct25 10:14]").replace(
        "[ 1843.439662]", "[  +0.131517]").replace("[ 1843.439669]", "[  +0.000007]")
    lines = parse_dmesg(reltime, "k")
    assert [line.line for line in lines] == [1, 4, 5]
    assert signals(lines)[0] == (
        1, "fallen_off_bus", "0000:b3:00.0", "GPU was unreachable when the driver probed it")
    assert lines[1].message == "NVRM: The NVIDIA probe routine failed for 1 device(s)."


def test_talos_gsp_init_failure_gives_the_status_meaning() -> None:
    lines = parse_dmesg(TALOS_GSP_INIT, "k")
    assert signals(lines) == [
        (1, "driver_loaded", None, "open 570.172.08"),
        (4, "rm_init_adapter_failed", "0000:01:00.0",
         "0x62:0x65:1859 (status 0x65: timed out waiting for the GPU)"),
        (5, "rm_init_adapter_failed", "0000:01:00.0", "device minor number 0")]


def test_syslog_init_failure_with_year_hint() -> None:
    lines = parse_dmesg(SYSLOG_INIT, "k", year_hint=2026)
    assert {line.time for line in lines} == {datetime(2026, 5, 27, 16, 50, 10, tzinfo=UTC)}
    assert signals(lines) == [
        (1, "rm_init_adapter_failed", "0000:09:00.0", "device minor number 0"),
        (3, "rm_init_adapter_failed", "0000:09:00.0",
         "0x22:0x56:894 (status 0x56: operation not supported (often missing or "
         "mismatched GSP firmware))")]


def test_journal_xid45_caused_by_nvlink_xids() -> None:
    events = [parse_xid(line) for line in parse_dmesg(JOURNAL_CAUSED_BY, "k")]
    assert [(e.xid, e.pci, e.pid, e.process, e.caused_by) for e in events if e] == [
        (45, "0000:dc:00.0", 1818990, "python3", 149),
        (45, "0000:ed:00.0", 1818992, "python3", 145)]


def test_dmesg_T_xids_43_31_94() -> None:
    lines = parse_dmesg(DMESG_T_XIDS, "k")
    assert xids(lines) == [(3, 43, "0000:00:05.0", 1045242, "pt_main_thread"),
                           (4, 31, "0000:00:07.0", 2512125, "python3.10"),
                           (5, 94, "0000:00:08.0", None, None)]
    assert lines[4].time == datetime(2024, 8, 9, 13, 32, 56, tzinfo=UTC)
    assert signals(lines) == [(1, "driver_loaded", None, "proprietary 535.183.01")]


def test_talosctl_dmesg_prefix_gives_time_and_message() -> None:
    lines = parse_dmesg(TALOS_PREFIX, "k")
    assert [(line.time, line.message) for line in lines] == [
        (datetime(2025, 9, 13, 20, 46, 45, 810476, tzinfo=UTC),
         "CPU: 2 UID: 0 PID: 2528 Comm: init Not tainted 6.12.25-talos #1"),
        (datetime(2025, 9, 13, 20, 46, 45, 810482, tzinfo=UTC), "Call trace:")]


# ----------------------------------------------------------------------- troubleshoot


def troubleshoot_files() -> dict[str, str | bytes]:
    root = TROUBLESHOOT / "support-bundle"
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("packed", [False, True], ids=["directory", "tar.gz"])
def test_troubleshoot_tree_maps_nodes_namespaces_and_configmaps(
        tmp_path: Path, packed: bool) -> None:
    path = (tar(tmp_path / "support-bundle.tar.gz", "support-bundle", troubleshoot_files())
            if packed else TROUBLESHOOT)
    with open_bundle(path) as opened:
        assert opened.layout == "replicated troubleshoot"
        assert (opened.manifest.cluster.server_version, opened.manifest.operator_namespace) \
            == (None, None)
        assert sorted(opened.paths) == [
            "cluster/configmaps.json", "cluster/namespaces.json", "cluster/nodes.json"]
        [node] = opened.cluster.nodes
        assert node.name == "repldev-marc"
        assert (node.status.capacity["cpu"], node.status.allocatable["memory"]) == (
            "8", "30770604Ki")
        assert [(c.type, c.status) for c in node.status.conditions] == [
            ("MemoryPressure", "False"), ("DiskPressure", "False"), ("PIDPressure", "False"),
            ("Ready", "True")]
        assert node.status.node_info.container_runtime_version == "containerd://1.2.5"
        assert node.labels["microk8s.io/cluster"] == "true"
        assert [c.metadata.name for c in opened.cluster.configmaps] == ["kube-root-ca.crt"]
        assert opened.manifest.failed_items == []


def test_troubleshoot_tree_analyses_without_problem_finding_or_error() -> None:
    with open_bundle(TROUBLESHOOT) as opened:
        report = analyze(opened, discover().rules)
    assert_clean(report)
    assert [f.id for f in report.findings] == []
    assert report.collection_gaps == []
