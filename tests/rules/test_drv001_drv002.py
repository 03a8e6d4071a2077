"""DRV001 (Xid events per GPU) and DRV002 (GPU lost), from every kernel-log transport."""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit.driver import A100, at, device_plugin, dp_log, gpu_node, journal_kernel, smi_gpu, smi_xml
from kit.driver import bundle_files as drv_files

UUID_3B = "GPU-3b6ec030-5adc-1847-e155-79f635584b4e"
UUID_5E = "GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8"
SMI_TWO = smi_xml(smi_gpu("00000000:3B:00.0", UUID_3B), smi_gpu("00000000:5E:00.0", UUID_5E))

# dmesg --time-format iso (the collector's format), R570+ wording without pid/name.
DMESG_79 = (
    "2026-11-29T08:00:04,512377+00:00 NVRM: loading NVIDIA UNIX x86_64 Kernel Module  "
    "570.195.03  Fri Sep 19 00:19:41 UTC 2025\n"
    "2026-11-29T11:24:11,100200+00:00 NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off "
    "the bus.\n"
    "2026-11-29T11:24:11,100305+00:00 NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
    "2026-11-29T11:24:11,100410+00:00 NVRM: A GPU crash dump has been created. If possible, "
    "please run\n"
)
DP_MARK = (
    "2026-11-29T11:24:12.873588972Z I1129 11:24:12.873541       1 health.go:185] "
    f"XidCriticalError: Xid=79 on Device={UUID_3B}; marking device as unhealthy.\n"
    "2026-11-29T11:24:12.873595882Z I1129 11:24:12.873567       1 server.go:292] "
    f"'nvidia.com/gpu' device marked unhealthy: {UUID_3B}\n"
)


def test_xid79_with_allocatable_drop_flags_only_that_gpu(tmp_path: Path) -> None:
    report = analyse(drv_files([gpu_node("gpu-a", 8, 7)],
        {"nodes/gpu-a/dmesg.txt": DMESG_79, "nodes/gpu-a/nvidia-smi.xml": SMI_TWO,
         dp_log("gpu-a"): DP_MARK},
        pods=[device_plugin("gpu-a")]), tmp=tmp_path)
    xid = of(report, "DRV001")
    lost = of(report, "DRV002")
    assert list(xid) == ["DRV001:gpu-a/0000:3b:00.0"]
    assert list(lost) == ["DRV002:gpu-a/0000:3b:00.0"]
    finding = xid["DRV001:gpu-a/0000:3b:00.0"]
    assert finding.severity.value == "critical"
    assert "Xid 79 (GPU fell off the bus) x1" in finding.summary
    assert UUID_3B in finding.summary and A100 in finding.summary
    assert "nvidia.com/gpu capacity 8, allocatable 7" in finding.summary
    assert "RESTART_BM" in finding.summary and "Likely cause: the PCIe path" in finding.summary
    assert "DRV002:gpu-a/0000:3b:00.0" in finding.caused_by
    assert not [link for link in finding.caused_by if "0000:5e" in link]
    assert ("nodes/gpu-a/dmesg.txt", 2) in [(e.path, e.line) for e in finding.evidence]
    assert (dp_log("gpu-a"), 1) in [(e.path, e.line) for e in finding.evidence]
    assert ("cluster/nodes.json", "/items/0/status/allocatable/nvidia.com~1gpu") in [
        (e.path, e.pointer) for e in finding.evidence]
    gone = lost["DRV002:gpu-a/0000:3b:00.0"]
    assert gone.severity.value == "critical"
    assert "DRV001:gpu-a/0000:3b:00.0" in gone.causes
    assert "(with an Xid 79 line)" in gone.summary
    assert "nvidia-smi still lists it" in gone.summary
    assert [e.line for e in gone.evidence if e.path == "nodes/gpu-a/dmesg.txt"] == [2, 3]


def test_plain_dmesg_xid79_pid0_and_bus_padding(tmp_path: Path) -> None:
    dmesg = ("[1084456.074562] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the "
             "bus.\n")
    report = analyse(drv_files([gpu_node("gpu-a")],
                    {"nodes/gpu-a/dmesg.txt": dmesg, "nodes/gpu-a/nvidia-smi.xml": SMI_TWO}),
                     tmp=tmp_path)
    finding = of(report, "DRV001")["DRV001:gpu-a/0000:3b:00.0"]
    assert f"GPU 0 ({A100}, {UUID_3B}) at 0000:3b:00.0" in finding.summary
    assert "1084456 s after boot" in finding.summary
    assert list(of(report, "DRV002")) == ["DRV002:gpu-a/0000:3b:00.0"]


def test_application_xids_alone_on_a_healthy_node_are_info(tmp_path: Path) -> None:
    dmesg = (
        "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
        "name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal "
        "Instruction Parameter\n"
        "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
        "name=<unknown>, Graphics SM Global Exception on (GPC 7, TPC 7, SM 0): Multiple Warp "
        "Errors\n"
        "[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:cb:00): 43, pid=1045242, "
        "name=pt_main_thread, Ch 00000008\n"
    )
    report = analyse(drv_files([gpu_node("gpu-b", 8, 8)], {"nodes/gpu-b/dmesg.txt": dmesg}),
                     tmp=tmp_path)
    assert list(of(report, "DRV001")) == ["DRV001:gpu-b/0000:cb:00.0"]
    finding = of(report, "DRV001")["DRV001:gpu-b/0000:cb:00.0"]
    assert finding.severity.value == "info"
    assert "hardware/driver Xids" not in finding.summary
    assert "application Xids: Xid 13 (Graphics/SM exception) x2, Xid 43" in finding.summary
    assert "not a hardware fault" in finding.summary
    assert finding.summary.index("2024-07-31T23:14:18Z") < finding.summary.index(
        "2024-08-30T11:43:09Z")
    assert not of(report, "DRV002")


def test_application_xids_on_a_degraded_node_stay_low(tmp_path: Path) -> None:
    dmesg = "[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:cb:00): 43, pid=1, name=x, Ch 08\n"
    report = analyse(drv_files([gpu_node("gpu-b", 8, 7)], {"nodes/gpu-b/dmesg.txt": dmesg}),
                     tmp=tmp_path)
    assert of(report, "DRV001")["DRV001:gpu-b/0000:cb:00.0"].severity.value == "low"


def test_caused_by_previous_xid_is_followed_and_journal_repeats_counted_once(
        tmp_path: Path) -> None:
    line_79 = "NVRM: Xid (PCI:0000:97:00): 79, GPU has fallen off the bus."
    line_45 = ("NVRM: Xid (PCI:0000:97:00): 45, pid=1818987, name=python3, Ch 00000003 "
               "caused by previous Xid 79")
    dmesg = f"2026-11-29T10:00:00,000100+00:00 {line_79}\n"
    journal = journal_kernel(
        (line_79, at("2026-11-29T10:00:01"), 5000.0),
        (line_45, at("2026-11-29T10:00:03"), 5002.0),
    )
    report = analyse(drv_files([gpu_node("gpu-c")],
                    {"nodes/gpu-c/dmesg.txt": dmesg,
                     "nodes/gpu-c/journal/kernel.jsonl": journal}), tmp=tmp_path)
    finding = of(report, "DRV001")["DRV001:gpu-c/0000:97:00.0"]
    assert finding.severity.value == "critical"
    assert "reported 2 Xid event(s)" in finding.summary
    assert ("Xid 45 at 2026-11-29T10:00:03Z was caused by Xid 79 (found at "
            "2026-11-29T10:00:00Z)") in finding.summary
    paths = [(e.path, e.line) for e in finding.evidence]
    assert ("nodes/gpu-c/dmesg.txt", 1) in paths
    assert ("nodes/gpu-c/journal/kernel.jsonl", 2) in paths
    assert ("nodes/gpu-c/journal/kernel.jsonl", 1) not in paths


def test_cause_missing_from_the_log_still_counts(tmp_path: Path) -> None:
    journal = journal_kernel((
        "NVRM: Xid (PCI:0000:97:00): 45, pid=1818987, name=python3, Ch 00000003 caused by "
        "previous Xid 145", at("2026-11-29T10:00:03"), 12.0))
    report = analyse(drv_files([gpu_node("gpu-c")],
                    {"nodes/gpu-c/dmesg.txt": "", "nodes/gpu-c/journal/kernel.jsonl": journal}),
                     tmp=tmp_path)
    finding = of(report, "DRV001")["DRV001:gpu-c/0000:97:00.0"]
    assert "that Xid is no longer in the collected log" in finding.summary
    assert finding.severity.value == "high"


def test_unknown_xid_is_reported_as_unknown(tmp_path: Path) -> None:
    dmesg = "[  12.5] NVRM: Xid (PCI:0000:3b:00): 250, pid=77, name=python3, something new\n"
    report = analyse(drv_files([gpu_node("gpu-a")], {"nodes/gpu-a/dmesg.txt": dmesg}), tmp=tmp_path)
    finding = of(report, "DRV001")["DRV001:gpu-a/0000:3b:00.0"]
    assert "Xid 250 (unknown to the catalog)" in finding.summary
    assert finding.severity.value == "medium"


def test_syslog_dbe_and_rminitadapter_on_two_gpus(tmp_path: Path) -> None:
    dmesg = (
        "Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, "
        "pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been "
        "detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, "
        "subpartition 1.\n"
        "Dec  2 12:36:17 worker4 kernel: [ 3669.298927] NVRM: GPU 0000:0a:00.0: "
        "RmInitAdapter failed! (0x24:0x72:1568)\n"
        "Dec  2 12:36:17 worker4 kernel: [ 3669.299196] NVRM: GPU 0000:0a:00.0: "
        "rm_init_adapter failed, device minor number 5\n"
    )
    report = analyse(drv_files([gpu_node("worker4")], {"nodes/worker4/dmesg.txt": dmesg}),
                     tmp=tmp_path)
    assert list(of(report, "DRV001")) == ["DRV001:worker4/0000:07:00.0"]
    assert of(report, "DRV001")["DRV001:worker4/0000:07:00.0"].severity.value == "high"
    lost = of(report, "DRV002")
    assert list(lost) == ["DRV002:worker4/0000:0a:00.0"]
    assert "status 0x72: GPU memory error" in lost["DRV002:worker4/0000:0a:00.0"].summary


def test_aer_on_the_gpu_address_and_device_handle_in_logs(tmp_path: Path) -> None:
    dmesg = (
        "2026-11-29T09:00:00,000001+00:00 pcieport 0000:3a:00.0: AER: Multiple Uncorrected "
        "(Fatal) error received: 0000:3b:00.0\n"
        "2026-11-29T09:00:00,000002+00:00 pcieport 0000:17:00.0: AER: Corrected error "
        "received: 0000:17:00.0\n"
    )
    log = ("2026-11-29T09:00:05Z Unable to determine the device handle for GPU0000:5E:00.0: "
           "GPU is lost.  Reboot the system to recover this GPU\n")
    report = analyse(drv_files([gpu_node("gpu-a")],
        {"nodes/gpu-a/dmesg.txt": dmesg, "nodes/gpu-a/nvidia-smi.xml": SMI_TWO,
         dp_log("gpu-a"): log},
        pods=[device_plugin("gpu-a")]), tmp=tmp_path)
    lost = of(report, "DRV002")
    assert sorted(lost) == ["DRV002:gpu-a/0000:3b:00.0", "DRV002:gpu-a/0000:5e:00.0"]
    assert "PCIe AER error" in lost["DRV002:gpu-a/0000:3b:00.0"].summary
    handle = lost["DRV002:gpu-a/0000:5e:00.0"]
    assert "NVML could not get a device handle" in handle.summary
    assert (dp_log("gpu-a"), 1) in [(e.path, e.line) for e in handle.evidence]
    assert not of(report, "DRV001")
