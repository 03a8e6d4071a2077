"""node.sh run for real against a directory standing in for a node's /, with the real containerd."""

import fnmatch
import io
import os
import re
import shutil
import subprocess
import tarfile

import pytest
from collector_support import (
    FIXTURES,
    NODE_SH,
    make_node_root,
    on_system_path,
    parse_steps,
    run_node_script,
    tar_members,
)

pytestmark = pytest.mark.skipif(
    not on_system_path("containerd"), reason="needs containerd for `config dump`"
)

ALWAYS = {
    "containerd/version.txt",
    "containerd/config-dump.toml",
    "containerd/files/etc/containerd/config.toml",
    "containerd/files/etc/containerd/conf.d/99-nvidia.toml",
    "journal/containerd.jsonl",
    "journal/kubelet.jsonl",
    "dmesg.txt",
    "nvidia-smi.xml",
    "systemd/containerd.txt",
    "systemd/kubelet.txt",
    "runtime.json",
    "host/kubelet.txt",
    "host/lspci.txt",
    "host/nvidia-driver-version.txt",
    "host/cgroup.txt",
    "host/dev-nvidia.txt",
    "host/gpu-processes.txt",
    "host/uname.txt",
    "host/os-release",
    "host/cmdline",
    "host/modules.txt",
    "host/secureboot.txt",
    "host/nvidia-ctk.txt",
    "host/unattended-upgrades.txt",
    "cdi/nvidia.yaml",
}


# What the known-issue entries read and gpu-a holds: the host toolkit's config, the kubelet's
# device-manager checkpoint and CPU-manager state, the CDI generator's journal, docker info.
GPU_A_ISSUE_FILES = {
    "toolkit/files/etc/nvidia-container-runtime/config.toml",
    "kubelet/files/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint",
    "kubelet/files/var/lib/kubelet/cpu_manager_state",
    "journal/nvidia-cdi-refresh.jsonl",
    "docker/info.json",
}
OPERATOR_TOOLKIT_CONFIG = (
    "toolkit/files/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml"
)


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    base = tmp_path_factory.mktemp("roots")
    return {
        "gpu-a": make_node_root(base, "gpu-a", host_driver=True),
        "gpu-b": make_node_root(base, "gpu-b", host_driver=False),
    }


@pytest.fixture(scope="module")
def gpu_a(roots):
    proc = run_node_script(roots["gpu-a"])
    assert proc.returncode == 0, proc.stderr.decode()
    files = tar_members(proc.stdout)
    return files, parse_steps(files["steps.tsv"].decode())


@pytest.fixture(scope="module")
def gpu_b(roots):
    proc = run_node_script(roots["gpu-b"], stdin_mode=True)  # the way the collector feeds it
    assert proc.returncode == 0, proc.stderr.decode()
    files = tar_members(proc.stdout)
    return files, parse_steps(files["steps.tsv"].decode())


def test_tar_holds_every_node_path_and_a_step_per_file(gpu_a):
    files, steps = gpu_a
    expected = ALWAYS | {
        "journal/nvidia-fabricmanager.jsonl",
        "cdi/k8s.device-plugin.nvidia.com-gpu.json",
        *GPU_A_ISSUE_FILES,
        "steps.tsv",
    }
    assert set(files) == expected
    assert set(steps) == expected - {"steps.tsv"}
    for path, row in steps.items():
        assert row["error"] is None and row["exit_code"] == 0, (path, row)
        assert row["bytes"] == len(files[path]) and row["truncated"] is False
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", row["started_at"])


def test_tar_stream_has_only_relative_regular_files_and_dirs(roots):
    data = run_node_script(roots["gpu-a"]).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for member in archive:
            assert member.isfile() or member.isdir(), member.name
            assert not member.name.startswith("/") and ".." not in member.name.split("/")


def test_real_containerd_dump_has_the_nvidia_runtime(gpu_a, roots):
    files, steps = gpu_a
    dump = files["containerd/config-dump.toml"].decode()
    assert "runtimes.nvidia" in dump
    assert "/usr/local/nvidia/toolkit/nvidia-container-runtime" in dump
    assert steps["containerd/config-dump.toml"]["command"] == [
        "containerd",
        "--config",
        str(roots["gpu-a"] / "etc/containerd/config.toml"),
        "config",
        "dump",
    ]
    assert files["containerd/version.txt"].startswith(b"containerd ")
    source = (roots["gpu-a"] / "etc/containerd/conf.d/99-nvidia.toml").read_bytes()
    assert files["containerd/files/etc/containerd/conf.d/99-nvidia.toml"] == source


def test_registry_drop_in_after_nvidia_drops_the_runtime_on_containerd_1x(gpu_b):
    """domain.md §4's drop-in trap, reproduced with the real binary: the dump tells the truth."""
    files, _steps = gpu_b
    assert "containerd/files/etc/containerd/conf.d/zz-registry.toml" in files
    assert b"BinaryName" in files["containerd/files/etc/containerd/conf.d/99-nvidia.toml"]
    version = files["containerd/version.txt"].decode()
    if " 1." in version:
        assert b"runtimes.nvidia" not in files["containerd/config-dump.toml"]


def test_dmesg_keeps_the_whole_ring_buffer_with_iso_timestamps(gpu_a):
    """Format 1.1: every kernel line (module loading, signatures, PCIe), not only NVRM ones."""
    files, steps = gpu_a
    assert files["dmesg.txt"] == (FIXTURES / "node" / "dmesg-iso.txt").read_bytes()
    lines = files["dmesg.txt"].decode().splitlines()
    assert any("fallen off the bus" in line for line in lines)
    assert any("e1000e" in line for line in lines)
    assert steps["dmesg.txt"]["command"] == ["dmesg", "--time-format", "iso"]


def test_dmesg_falls_back_to_plain_dmesg(gpu_b, roots):
    files, steps = gpu_b
    assert steps["dmesg.txt"]["command"] == ["dmesg"]
    assert steps["dmesg.txt"]["error"] is None
    assert files["dmesg.txt"] == (FIXTURES / "node" / "dmesg-plain.txt").read_bytes()
    calls = (roots["gpu-b"] / "fake" / "calls.log").read_text()
    assert "dmesg --time-format iso" in calls


def test_journals_systemd_and_host_facts(gpu_a, roots):
    files, steps = gpu_a
    assert steps["journal/kubelet.jsonl"]["command"] == [
        "journalctl",
        "-u",
        "kubelet",
        "-o",
        "json",
        "--since",
        "-168h",
    ]
    assert b"Scheduled restart job" in files["journal/containerd.jsonl"]
    assert files["systemd/containerd.txt"].decode().splitlines()[0] == "Restart=always"
    assert steps["systemd/containerd.txt"]["command"] == [
        "systemctl",
        "show",
        "containerd",
        "-p",
        "LoadState,ActiveState,SubState,Restart,RestartUSec,NRestarts,ExecMainPID,"
        "ExecMainStartTimestamp",
    ]
    # Format 1.1: all of /proc/modules.
    assert files["host/modules.txt"] == (roots["gpu-a"] / "proc/modules").read_bytes()
    assert files["host/os-release"] == (roots["gpu-a"] / "etc/os-release").read_bytes()
    assert files["host/cmdline"].startswith(b"BOOT_IMAGE=")
    assert files["host/secureboot.txt"] == b"SecureBoot disabled\n"
    ctk = files["host/nvidia-ctk.txt"].decode().splitlines()
    assert ctk[0].endswith("/fake/bin/nvidia-ctk") and "1.17.8" in ctk[1]
    upgrades = files["host/unattended-upgrades.txt"].decode()
    assert "==> /etc/apt/apt.conf.d/20auto-upgrades <==" in upgrades
    assert "==> /etc/apt/apt.conf.d/50unattended-upgrades <==" in upgrades
    assert files["nvidia-smi.xml"].startswith(b"<?xml")


def test_fabricmanager_only_where_the_unit_exists(gpu_a, gpu_b):
    assert "journal/nvidia-fabricmanager.jsonl" in gpu_a[1]
    assert "journal/nvidia-fabricmanager.jsonl" not in gpu_b[1]
    assert "journal/nvidia-fabricmanager.jsonl" not in gpu_b[0]


@pytest.mark.skipif(
    on_system_path("nvidia-smi"), reason="a real nvidia-smi on this machine shadows the fallback"
)
def test_nvidia_smi_from_the_driver_container_root(gpu_b, roots):
    files, steps = gpu_b
    assert steps["nvidia-smi.xml"]["command"] == [
        "chroot",
        str(roots["gpu-b"] / "run/nvidia/driver"),
        "nvidia-smi",
        "-q",
        "-x",
    ]
    assert b"<driver_version>570.195.03</driver_version>" in files["nvidia-smi.xml"]


def test_failed_steps_are_recorded_without_files(gpu_b):
    files, steps = gpu_b
    secureboot = steps["host/secureboot.txt"]
    assert secureboot["exit_code"] == 1
    assert secureboot["error"] == "EFI variables are not supported on this system"
    assert "host/secureboot.txt" not in files
    if not on_system_path("nvidia-ctk"):
        assert steps["host/nvidia-ctk.txt"]["exit_code"] == 127
        assert "not found" in steps["host/nvidia-ctk.txt"]["error"]
        assert "host/nvidia-ctk.txt" not in files


def test_cdi_specs_from_both_directories(gpu_a):
    files, _steps = gpu_a
    assert files["cdi/nvidia.yaml"] == (FIXTURES / "node" / "cdi-nvidia.yaml").read_bytes()
    assert b"k8s.device-plugin.nvidia.com/gpu" in files["cdi/k8s.device-plugin.nvidia.com-gpu.json"]


def test_file_and_stdin_modes_collect_the_same(roots, gpu_b):
    proc = run_node_script(roots["gpu-b"])
    assert set(tar_members(proc.stdout)) == set(gpu_b[0])


@pytest.mark.skipif(not shutil.which("timeout"), reason="needs timeout(1)")
def test_step_timeout_is_recorded_and_the_rest_goes_on(tmp_path):
    root = make_node_root(tmp_path, "gpu-a")
    (root / "fake" / "journal" / "kubelet.sleep").write_text("10")
    proc = run_node_script(root, GPU_TRIAGE_STEP_TIMEOUT="1")
    files = tar_members(proc.stdout)
    steps = parse_steps(files["steps.tsv"].decode())
    assert steps["journal/kubelet.jsonl"]["error"] == "timed out after 1s"
    assert steps["journal/kubelet.jsonl"]["exit_code"] == 124
    assert "journal/kubelet.jsonl" not in files
    assert steps["host/uname.txt"]["error"] is None


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """One run on a root with unsafe file names and a multi-line error, under a 1000-byte cap."""
    root = make_node_root(tmp_path_factory.mktemp("hostile"), "gpu-a")
    (root / "etc/containerd/conf.d/bad name.toml").write_text("version = 2\n")
    (root / "etc/cdi/evil$(id).yaml").write_text("kind: x\n")
    script = root / "fake" / "bin" / "mokutil"
    script.write_text(
        "#!/bin/sh\nprintf 'first\\tline \\\\ with a backslash\\nsecond line\\n' >&2\nexit 3\n"
    )
    script.chmod(0o755)
    files = tar_members(run_node_script(root, GPU_TRIAGE_MAX_FILE_BYTES="1000").stdout)
    return files, parse_steps(files["steps.tsv"].decode())


def test_byte_cap_truncates_and_marks(hostile):
    files, steps = hostile
    assert len(files["containerd/config-dump.toml"]) == 1000
    assert steps["containerd/config-dump.toml"]["truncated"] is True
    assert steps["containerd/config-dump.toml"]["error"] is None
    assert steps["host/cmdline"]["truncated"] is False


def test_unsafe_file_names_are_refused(hostile):
    files, steps = hostile
    assert not any(" " in name or "$" in name for name in files)
    assert "refused an unsafe file name" in steps["containerd/files"]["error"]
    assert "refused an unsafe file name" in steps["cdi"]["error"]


def test_errors_with_tabs_and_newlines_survive_the_tsv(hostile):
    row = hostile[1]["host/secureboot.txt"]
    assert row["error"] == "first\tline \\ with a backslash\nsecond line"
    assert row["exit_code"] == 3


@pytest.mark.parametrize(
    "variable, value",
    [
        ("GPU_TRIAGE_SINCE", "1h; reboot"),
        ("GPU_TRIAGE_MAX_FILE_BYTES", "10M"),
        ("GPU_TRIAGE_STEP_TIMEOUT", "-1"),
        ("GPU_TRIAGE_HOST_ROOT", "relative/dir"),
    ],
)
def test_bad_settings_are_refused(tmp_path, variable, value):
    root = make_node_root(tmp_path, "gpu-a")
    proc = run_node_script(root, **{variable: value})
    assert proc.returncode == 2 and proc.stdout == b""
    assert variable in proc.stderr.decode()


def test_node_steps_table_matches_what_node_sh_writes(gpu_a, gpu_b):
    """collect.NODE_STEPS (dry-run text and failed-node items) must name what node.sh writes."""
    from collectors.collect import NODE_STEPS

    patterns = [path.replace("<file>", "*") for path, _command, _always in NODE_STEPS]
    for _files, steps in (gpu_a, gpu_b):
        for path in steps:
            assert any(fnmatch.fnmatch(path, p) for p in patterns), path
    for path, _command, always in NODE_STEPS:
        if always:
            assert path in gpu_a[1] and path in gpu_b[1], path


def test_shellcheck_posix_sh():
    if not shutil.which("shellcheck"):
        if os.environ.get("CI"):
            pytest.fail("shellcheck is required under CI")
        pytest.skip("shellcheck not installed")
    proc = subprocess.run(["shellcheck", "-s", "sh", str(NODE_SH)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_known_issue_inputs_copied_verbatim_where_they_exist(gpu_a, gpu_b):
    files, steps = gpu_a
    node = FIXTURES / "node"
    assert files["toolkit/files/etc/nvidia-container-runtime/config.toml"] == (
        node / "nvidia-container-runtime-config.toml"
    ).read_bytes()
    checkpoint = "kubelet/files/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
    assert files[checkpoint] == (node / "kubelet_internal_checkpoint").read_bytes()
    assert files["kubelet/files/var/lib/kubelet/cpu_manager_state"] == (
        node / "cpu_manager_state"
    ).read_bytes()
    assert b"nvidia-cdi-refresh.service" in files["journal/nvidia-cdi-refresh.jsonl"]
    assert steps["journal/nvidia-cdi-refresh.jsonl"]["command"][:3] == [
        "journalctl", "-u", "nvidia-cdi-refresh"]
    assert files["docker/info.json"] == (node / "docker-info.json").read_bytes()
    assert steps["docker/info.json"]["command"] == ["docker", "info", "--format", "{{json .}}"]
    assert OPERATOR_TOOLKIT_CONFIG not in files
    # gpu-b: the operator's toolkit config only; no kubelet state, no CDI unit, no daemon for
    # its docker CLI (the fake one on PATH): nothing collected and no failed step either.
    files_b, steps_b = gpu_b
    assert files_b[OPERATOR_TOOLKIT_CONFIG] == (node / "toolkit-operator-config.toml").read_bytes()
    for path in GPU_A_ISSUE_FILES:
        assert path not in files_b and path not in steps_b, path


def test_kubelet_state_under_the_kubelets_root_dir(tmp_path):
    root = make_node_root(tmp_path, "gpu-c", host_driver=False)
    args = "\0".join(("/usr/bin/kubelet", "--root-dir=/data/kubelet",
                      "--config=/var/lib/kubelet/config.yaml"))
    (root / "proc" / "4242" / "cmdline").write_text(args + "\0")
    state = root / "data" / "kubelet" / "cpu_manager_state"
    state.parent.mkdir(parents=True)
    state.write_text('{"policyName":"none","defaultCpuSet":"","checksum":1}\n')
    (root / "var" / "lib" / "kubelet" / "cpu_manager_state").write_text("not this one\n")
    proc = run_node_script(root)
    assert proc.returncode == 0, proc.stderr.decode()
    files = tar_members(proc.stdout)
    assert files["kubelet/files/data/kubelet/cpu_manager_state"] == state.read_bytes()
    assert not any(p.startswith("kubelet/files/var/") for p in files)
