"""gpu-triage verify: spec paths present, failed with an error, missing or malformed."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from kit.bundles import kube_list, write_dir

from bundle import open_bundle
from bundle.verify import verify
from gpu_triage.cli import cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def test_both_lab_samples_verify_clean() -> None:
    for name in ("incident-toolkit-disabled", "healthy-toolkit-enabled"):
        result = CliRunner().invoke(cli, ["verify", str(SAMPLES / name)])
        assert result.exit_code == 0, result.stdout
        assert result.stdout.strip().endswith("0 reader problem(s)")


def test_missing_failed_and_malformed_paths_are_named(tmp_path: Path) -> None:
    files = {
        "cluster/nodes.json": kube_list(),
        "cluster/pods.json": "{broken",
        "nodes/gpu-a/journal/kubelet.jsonl": '{"MESSAGE": "ok"}\nnot json\n',
        "nodes/gpu-a/containerd/config-dump.toml": "version = [",
    }
    path = write_dir(tmp_path / "b", files,
                     failed=[{"path": "cluster/events.json", "error": "events is forbidden"}])
    with open_bundle(path) as bundle:
        checks = {c.path: c for c in verify(bundle)}
    assert checks["cluster/nodes.json"].status == "ok"
    assert checks["cluster/events.json"].status == "failed"
    assert checks["cluster/events.json"].detail == "events is forbidden"
    assert checks["cluster/deployments.json"].status == "missing"
    assert checks["cluster/pods.json"].status == "malformed"
    assert checks["nodes/gpu-a/journal/kubelet.jsonl"].detail.startswith("1 line(s)")
    assert checks["nodes/gpu-a/containerd/config-dump.toml"].status == "malformed"
    assert checks["nodes/gpu-a/dmesg.txt"].status == "missing"
    result = CliRunner().invoke(cli, ["verify", str(path)])
    assert result.exit_code == 1
    assert "malformed cluster/pods.json" in result.stdout
    assert "failed    cluster/events.json  events is forbidden" in result.stdout


def test_unreadable_bundle_exits_3(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tgz"
    junk.write_text("nope")
    result = CliRunner().invoke(cli, ["verify", str(junk)])
    assert result.exit_code == 3


def test_nvidia_smi_text_where_the_xml_belongs_is_named(tmp_path: Path) -> None:
    real = Path(__file__).parent / "fixtures" / "real" / "smi" / "text"
    text = (real / "a10_r550.txt").read_bytes()
    path = write_dir(tmp_path / "b", {"cluster/nodes.json": kube_list(),
                                      "nodes/gpu-a/nvidia-smi.xml": text})
    with open_bundle(path) as bundle:
        checks = {c.path: c for c in verify(bundle)}
        assert len(bundle.node("gpu-a").nvidia_smi.gpus) == 1  # type: ignore[union-attr]
    assert checks["nodes/gpu-a/nvidia-smi.xml"].status == "malformed"
    assert checks["nodes/gpu-a/nvidia-smi.xml"].detail == (
        "the text report of nvidia-smi -q, not the XML of -q -x (analyze reads it)")
