"""DRV009: nvidia-smi itself failed on the node, linked to what explains it; BND001 steps
aside for that item. Wordings from the public trackers (sources in signatures.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse, status
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod

from analyzers.results.models import RuleStatus, Severity

# https://github.com/NVIDIA/gpu-operator/issues/751 ("command terminated with exit code 9")
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.")


def _smi_item(node: str, error: str, exit_code: int | None) -> dict[str, Any]:
    return {"path": f"nodes/{node}/nvidia-smi.xml", "node": node,
            "command": ["nvidia-smi", "-q", "-x"], "exit_code": exit_code, "error": error}


def test_unexplained_failure_is_high_and_says_so(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.failed.append(_smi_item("gpu-a", NO_DRIVER, 9))
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "DRV009")
    assert sorted(found) == ["DRV009:gpu-a"]
    smi = found["DRV009:gpu-a"]
    assert smi.severity is Severity.HIGH
    assert smi.nodes == ["gpu-a"]
    assert "nvidia-smi failed (exit code 9)" in smi.summary
    assert "no NVIDIA kernel module is loaded" in smi.summary
    # the kit's node files hold no kernel log: the kernel's journal is what to ask for
    assert smi.summary.endswith(
        "The bundle does not say why nvidia-smi fails: the bundle holds no kernel log of the "
        "node; the kernel's journal says whether the driver loaded and why not. Ask next for "
        "the output of: kubectl debug node/gpu-a -it --image=ubuntu -- chroot /host sh -c "
        "\"journalctl -k --no-pager | grep -iE 'NVRM|nvidia|nouveau|Lockdown' | tail -50; "
        "lsmod | grep -E '^(nvidia|nouveau)'\"")
    assert "No rule identified" not in smi.summary
    [evidence] = smi.evidence
    assert evidence.path == "manifest.json"
    assert evidence.pointer is not None and evidence.pointer.endswith("/error")
    assert evidence.excerpt.startswith("exit code 9: NVIDIA-SMI has failed because")
    # BND001 groups the item apart and links to DRV009 instead of calling it a gap.
    bnd = of_rule(report, "BND001")
    assert sorted(bnd) == ["BND001:nvidia-smi-failed"]
    assert bnd["BND001:nvidia-smi-failed"].caused_by == ["DRV009:gpu-a"]
    assert bnd["BND001:nvidia-smi-failed"].severity is Severity.INFO


def test_explained_by_the_driver_stage_is_low_and_linked(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.failed.append(_smi_item("gpu-b", NO_DRIVER, 9))
    cluster.put(operand_pod("nvidia-driver-daemonset", "gpu-b",
                            mains={"nvidia-driver-ctr": "waiting:CrashLoopBackOff"}))
    report = analyse(cluster, tmp=tmp_path)
    smi = of_rule(report, "DRV009")["DRV009:gpu-b"]
    assert smi.caused_by == ["OP001:gpu-b"]
    assert smi.severity is Severity.LOW
    assert "see OP001" in smi.summary
    assert "Ask next" not in smi.summary and "No known cause" not in smi.summary


def test_words_left_in_the_file_are_read(tmp_path: Path) -> None:
    """nvidia-smi prints its failure on stdout: the collector kept it as the file."""
    cluster = Cluster()
    cluster.files["nodes/gpu-a/nvidia-smi.xml"] = (
        "Failed to initialize NVML: Driver/library version mismatch\n")
    cluster.failed.append(_smi_item("gpu-a", "exit status 18", 18))
    smi = of_rule(analyse(cluster, tmp=tmp_path), "DRV009")["DRV009:gpu-a"]
    assert "differ in version" in smi.summary
    assert ("nodes/gpu-a/nvidia-smi.xml", 1) in [(e.path, e.line) for e in smi.evidence]


def test_no_devices_found(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/gpu-operator/issues/641
    cluster = Cluster()
    cluster.failed.append(_smi_item("gpu-b", "No devices were found", 6))
    smi = of_rule(analyse(cluster, tmp=tmp_path), "DRV009")["DRV009:gpu-b"]
    assert "the driver is loaded but found no GPU" in smi.summary


def test_quiet_when_nvidia_smi_is_missing_or_worked(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.failed.append(_smi_item(
        "gpu-a", "nvidia-smi not found on the host nor under /run/nvidia/driver", 1))
    cluster.failed.append(_smi_item("gpu-b", "timed out after 60s", 124))
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "DRV009") == {}
    assert status(report, "DRV009") is RuleStatus.PASSED
    assert "BND001:nvidia-smi-failed" not in report.by_id()


def test_unexplained_failure_quotes_the_first_nvidia_error_of_the_kernel_log(
        tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.failed.append(_smi_item("gpu-a", NO_DRIVER, 9))
    # An error line about something else is passed over (Xorg's words,
    # https://github.com/Bumblebee-Project/Bumblebee/issues/553); then the kernel's
    # (https://github.com/ValveSoftware/SteamOS/issues/209).
    cluster.files["nodes/gpu-a/dmesg.txt"] = (
        '[ 5928.582] (EE) Failed to load module "mouse" (module does not exist, 0)\n'
        "[  441.170986] NVRM: No NVIDIA graphics adapter found!\n"
        "[  441.171021] NVRM: NVIDIA init module failed!\n")
    smi = of_rule(analyse(cluster, tmp=tmp_path), "DRV009")["DRV009:gpu-a"]
    assert smi.summary.endswith(
        "No known cause explains why nvidia-smi fails; the first error the node's kernel log "
        "shows is 'NVRM: NVIDIA init module failed!' (nodes/gpu-a/dmesg.txt line 3).")
