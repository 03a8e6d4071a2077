"""The driver's verdicts as facts (analyzers/facts/driver.py): judged once per run, read
the same by the rule that reports each and by the rules that link to it, and not judged
at all where the input a verdict rests on is absent from the whole bundle (as the rule
that reports it would be skipped)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kit.bundles import write_dir
from kit.driver import at, gpu_node, journal_kernel
from kit.objects import lists

from analyzers.facts import Facts, driver
from analyzers.facts.driver import SmiCause
from analyzers.facts.memo import per_node
from bundle import open_bundle

NOUVEAU = "nouveau 2306048 0 - Live 0x0000000000000000\n"
NVIDIA = "nvidia 104071168 28 nvidia_uvm, Live 0x0000000000000000 (PO)\n"
SMI_FAILED = {"path": "nodes/gpu-a/nvidia-smi.xml",
              "error": "NVIDIA-SMI has failed because it couldn't communicate with the "
                       "NVIDIA driver. Make sure that the latest NVIDIA driver is installed "
                       "and running."}
# the kernel's refusal as tests/rules/test_drv008.py quotes it (continuation lines)
REFUSED = ("[  422.450961] NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:1db4)\n"
           "               NVRM: installed in this system is not supported by the\n"
           "               NVRM: NVIDIA 470.256.02 driver release.\n")
LSPCI = ("3b:00.0 3D controller [0302]: NVIDIA Corporation GV100GL [Tesla V100 PCIe 16GB] "
         "[10de:1db4] (rev a1)\n"
         "\tKernel driver in use: vfio-pci\n")


@contextmanager
def facts_of(tmp_path: Path, files: dict[str, Any],
             failed: list[dict[str, Any]] | None = None) -> Iterator[Facts]:
    content: dict[str, Any] = lists(nodes=[gpu_node("gpu-a"), gpu_node("gpu-b")], pods=[],
                                    events=[])
    content.update(files)
    with open_bundle(write_dir(tmp_path / "bundle", content, failed)) as bundle:
        yield Facts(bundle)


def test_unusable_names_the_node_and_its_problems(tmp_path: Path) -> None:
    with facts_of(tmp_path, {"nodes/gpu-a/dmesg.txt": "", "nodes/gpu-a/host/modules.txt":
                             NOUVEAU, "nodes/gpu-b/dmesg.txt": "",
                             "nodes/gpu-b/host/modules.txt": NVIDIA},
                  failed=[SMI_FAILED]) as facts:
        verdict = driver.unusable(facts, "gpu-a")
        assert verdict is not None
        assert (verdict.node, sorted(verdict.kinds)) == ("gpu-a", ["not-loaded", "nouveau"])
        assert verdict.texts[0] == "nouveau holds the GPU, so nvidia.ko cannot bind it"
        assert verdict.evidence[0].path == "nodes/gpu-a/host/modules.txt"
        assert driver.unusable(facts, "gpu-b") is None
        # the same answer, judged once: nvidia-smi's failure is explained by it
        assert driver.unusable(facts, "gpu-a") is verdict
        assert driver.smi_causes(facts, "gpu-a") == (SmiCause.UNUSABLE,)
        assert not driver.smi_unexplained(facts, "gpu-a")


def test_without_any_kernel_log_the_driver_is_not_judged(tmp_path: Path) -> None:
    # nouveau is loaded, but no node's dmesg.txt was collected: DRV003 would be skipped,
    # so nothing may link to it, and nvidia-smi's failure stands unexplained
    journal = journal_kernel(
        ("nouveau 0000:3b:00.0: NVIDIA GV100 (140000a1)", at("2026-11-29T10:00:01"), 5.0),
        ("NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:1db4) installed in this system is "
         "not supported by the NVIDIA 470.256.02 driver release.", at("2026-11-29T10:00:02"),
         6.0))
    with facts_of(tmp_path, {"nodes/gpu-a/journal/kernel.jsonl": journal,
                             "nodes/gpu-a/host/modules.txt": NOUVEAU},
                  failed=[SMI_FAILED]) as facts:
        kernel = facts.kernel_events["gpu-a"]  # the journal alone shows both
        assert kernel.signals_of("nouveau") and kernel.signals_of("unsupported_gpu")
        assert driver.unusable(facts, "gpu-a") is None
        assert driver.gpu_refusal(facts, "gpu-a") is None
        assert facts.smi_failure("gpu-a") is not None
        assert driver.smi_unexplained(facts, "gpu-a")


def test_gpu_refusal_finds_the_refused_gpu_by_address(tmp_path: Path) -> None:
    with facts_of(tmp_path, {"nodes/gpu-a/dmesg.txt": REFUSED,
                             "nodes/gpu-a/host/lspci.txt": LSPCI.replace("vfio-pci", "nvidia"),
                             "nodes/gpu-b/dmesg.txt": ""}) as facts:
        refusal = driver.gpu_refusal(facts, "gpu-a")
        assert refusal is not None
        assert (refusal.branch, refusal.version, sorted(refusal.pci_ids)) == (
            True, "470.256.02", ["10de:1db4"])
        assert [d.address for d in refusal.devices] == ["3b:00.0"]
        assert refusal.lspci_path == "nodes/gpu-a/host/lspci.txt"
        assert (sorted(refusal.keys), refusal.unaddressed) == (["0000:3b:00.0"], False)
        assert driver.gpu_refusal(facts, "gpu-b") is None


def test_foreign_binding_unless_the_gpus_are_meant_for_vms(tmp_path: Path) -> None:
    files = {"nodes/gpu-a/host/lspci.txt": LSPCI, "nodes/gpu-b/host/lspci.txt": LSPCI}
    vm = gpu_node("gpu-b")
    vm["metadata"]["labels"]["nvidia.com/gpu.workload.config"] = "vm-passthrough"
    content: dict[str, Any] = lists(nodes=[gpu_node("gpu-a"), vm], pods=[], events=[])
    content.update(files)
    with open_bundle(write_dir(tmp_path / "bundle", content)) as bundle:
        facts = Facts(bundle)
        binding = driver.foreign_binding(facts, "gpu-a")
        assert binding is not None
        assert [(d.address, d.driver) for d in binding.devices] == [("3b:00.0", "vfio-pci")]
        assert driver.foreign_binding(facts, "gpu-b") is None


def test_a_verdict_is_judged_once_per_run_and_node() -> None:
    asked: list[tuple[int, str]] = []

    def judge(facts: object, node: str) -> str:
        asked.append((id(facts), node))
        return f"{node}!"

    judged = per_node(judge)
    first, second = Facts.__new__(Facts), Facts.__new__(Facts)
    assert [judged(first, "a"), judged(first, "a"), judged(first, "b"),
            judged(second, "a")] == ["a!", "a!", "b!", "a!"]
    assert asked == [(id(first), "a"), (id(first), "b"), (id(second), "a")]
