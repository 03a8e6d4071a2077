"""facts.first_error: the earliest error line of a container's logs, across log formats,
with harmless wordings skipped and the failing step of a shell script named.

Every error line below is a real one, quoted from the public page next to it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kit.bundles import write_dir
from kit.cluster import Cluster, pod_name
from kit.objects import pod as pod_dict

from analyzers.facts import Facts
from analyzers.facts.first_error import (
    FirstError,
    Level,
    first_error_of,
    harmless,
    level_of,
)
from analyzers.facts.podlogs import ContainerLog
from bundle import open_bundle
from bundle.kube import Pod

POD, _ = Pod.parse(pod_dict("nvidia-driver-daemonset-x1", "gpu-1", app="nvidia-driver-daemonset"))


def log(lines: list[str], container: str = "nvidia-driver-ctr", *,
        previous: bool = False) -> ContainerLog:
    suffix = ".previous.log" if previous else ".log"
    return ContainerLog(POD, container, f"logs/gpu-operator/{POD.name}/{container}{suffix}",
                        "\n".join(lines) + "\n", False, previous)


def found(lines: list[str], container: str = "nvidia-driver-ctr") -> FirstError:
    result = first_error_of(log(lines, container))
    assert result is not None
    return result


# (line, how it is an error, where it was seen)
ERRORS = [
    # klog, device plugin: https://github.com/NVIDIA/k8s-device-plugin/issues/655
    ("E0417 07:12:59.758986       1 factory.go:115] Incompatible platform detected",
     Level.KLOG),
    # logrus, validator: https://github.com/NVIDIA/gpu-operator/blob/a22dbf671f2e26f9a1e342f8eea28e196235e110/cmd/nvidia-validator/main.go#L924
    ('time="2026-08-21T10:00:05Z" level=error msg="driver is not ready: error validating '
     'driver: exit status 9"', Level.LOGRUS),
    # logrus on a terminal, dcgm-exporter: https://github.com/NVIDIA/dcgm-exporter/issues/360
    ("ERRO[0000] Encountered a failure.                        stacktrace=\"goroutine 1\"",
     Level.LOGRUS),
    # JSON, CDI injection: https://github.com/NVIDIA/k8s-device-plugin/issues/1203
    ('{"level":"error","msg":"could not apply required modification to OCI specification: '
     'error modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices '
     'nvidia.com/gpu=all","time":"2025-03-14T17:28:25Z"}', Level.JSON),
    # Go panic, dcgm-exporter: https://github.com/NVIDIA/dcgm-exporter/issues/133
    ("panic: assignment to entry in nil map", Level.PANIC),
    # Go signal crash, dcgm-exporter: https://github.com/NVIDIA/dcgm-exporter/issues/409
    ("SIGSEGV: segmentation violation", Level.PANIC),
    # nvidia-installer: https://github.com/NVIDIA/gpu-operator/issues/206
    ("ERROR: Unable to open 'kernel/dkms.conf' for copying (No such file or directory)",
     Level.PREFIX),
    # dnf in the RHEL driver image: https://github.com/NVIDIA/gpu-operator/issues/190
    ("Error: Unable to find a match: kernel-devel-4.18.0-240.22.1.el8_3.x86_64", Level.PREFIX),
    # apt: https://github.com/GoogleCloudPlatform/container-engine-accelerators/issues/140
    ("E: Unable to locate package linux-headers-5.3.0-1029-gcp", Level.PREFIX),
    # dkms: https://github.com/NVIDIA/open-gpu-kernel-modules/issues/526
    ("Error! Bad return status for module build on kernel: 6.4.1-zen1-1-zen (x86_64)",
     Level.PREFIX),
    # the module build's compiler check: https://github.com/GoogleCloudPlatform/compute-gpu-installation/issues/15
    ("*** Failed CC version check. Bailing out! ***", Level.PREFIX),
    # modprobe under SELinux: https://github.com/NVIDIA/gpu-operator/issues/553
    ("modprobe: ERROR: could not insert 'nvidia': Permission denied", Level.TOOL),
    # gcc, driver 450 on a Rocky 8.4 kernel: https://github.com/NVIDIA/gpu-operator/issues/264
    ("/usr/src/nvidia-450.80.02/kernel/nvidia-drm/nvidia-drm-gem-user-memory.c:63:48: error: "
     "passing argument 1 of 'drm_prime_pages_to_sg' from incompatible pointer type "
     "[-Werror=incompatible-pointer-types]", Level.COMPILER),
    # make: https://github.com/NVIDIA/gpu-operator/issues/583
    ("make[1]: *** /lib/modules/5.15.0-60-generic/build: No such file or directory.  Stop.",
     Level.MAKE),
    # the driver script's own words, no level: https://github.com/NVIDIA/gpu-operator/issues/227
    ("Could not resolve Linux kernel version", Level.WORDING),
]


@pytest.mark.parametrize(("line", "level"), ERRORS, ids=[e[1].name + str(i)
                                                          for i, e in enumerate(ERRORS)])
def test_real_error_lines_are_found_with_their_level(line: str, level: Level) -> None:
    result = found(["Starting installation of NVIDIA driver", line, "Stopping"])
    assert (result.line, result.text, result.level) == (2, line, level)


# Lines at a level below error: never the first error, whatever their words say.
NOT_ERRORS = [
    # klog info line saying "failed": https://github.com/NVIDIA/libnvidia-container/issues/117
    "I0712 15:58:44.535432 184795 nvc.c:395] dxcore initialization failed, continuing "
    "assuming a non-WSL environment",
    # logrus warning: https://github.com/NVIDIA/nvidia-container-toolkit/issues/1611
    'time="2026-01-25T00:45:43+11:00" level=warning msg="Could not determine driver version: '
    'libnvsandboxutils is not available"',
    # JSON info line whose message says "Failed": https://github.com/NVIDIA/gpu-operator/issues/149
    '{"level":"info","ts":1613468313.7898407,"logger":"controller_clusterpolicy","msg":"Failed '
    "to apply transformation 'nvidia-driver-daemonset' with error: 'ERROR: Could not find "
    "kernel full version: ('', '')'\"}",
    # slog warning: https://github.com/NVIDIA/dcgm-exporter/issues/450
    "2025/02/07 22:48:18 WARN Skipping line 19 ('DCGM_FI_PROF_PCIE_TX_BYTES'): metric not "
    "enabled",
    # nvidia-installer warning: https://github.com/kubernetes-sigs/cluster-api-provider-azure/issues/1907
    "WARNING: Unable to determine the default X library path. The path /tmp/null/lib will be "
    "used",
    # zap's console format, the operator's reconcile at info level:
    # https://github.com/NVIDIA/gpu-operator/issues/364
    '1.6564608582434602e+09\tINFO\tcontrollers.ClusterPolicy\tGPU workload configuration\t'
    '{"NodeName": "number1", "GpuWorkloadConfig": "container"}',
    # apt's warning after a failed fetch: https://github.com/NVIDIA/nvidia-docker/issues/61
    "W: Some index files failed to download. They have been ignored, or old ones used instead.",
    # a traced shell command is a step, not an error: https://github.com/NVIDIA/gpu-operator/issues/110
    "+ trap 'echo '\\''Caught signal'\\''; exit 1' HUP INT QUIT PIPE TERM",
]


@pytest.mark.parametrize("line", NOT_ERRORS)
def test_lines_below_error_level_are_not_errors(line: str) -> None:
    assert first_error_of(log([line])) is None


def test_timestamps_of_kubectl_and_cri_are_read_through() -> None:
    line = "E0417 07:12:59.758986       1 factory.go:115] Incompatible platform detected"
    assert level_of(f"2024-04-17T07:12:59.758986123Z {line}") is Level.KLOG
    assert level_of(f"2024-04-17T07:12:59.758986123Z stderr F {line}") is Level.KLOG
    assert level_of("2024/10/29 11:52:47 maxprocs: Leaving GOMAXPROCS=256: CPU quota "
                    "undefined") is None


def test_the_earliest_error_wins_and_its_set_x_step_is_named() -> None:
    # The ubuntu driver installer traced with set -x, headers not in the mirror:
    # https://github.com/GoogleCloudPlatform/container-engine-accelerators/issues/140
    result = found([
        "+ KERNEL_VERSION=5.3.0-1029-gcp",
        "+ apt-get install -y linux-headers-5.3.0-1029-gcp",
        "Reading package lists...",
        "E: Unable to locate package linux-headers-5.3.0-1029-gcp",
        "E: Couldn't find any package by glob 'linux-headers-5.3.0-1029-gcp'",
    ])
    assert result.line == 4
    assert result.step is not None and result.step.line == 3  # the progress line before it
    assert [e.line for e in result.evidence] == [3, 4]


def test_a_progress_step_of_the_driver_script_is_the_failing_step() -> None:
    # https://github.com/NVIDIA/gpu-operator/issues/264
    result = found([
        "Installing Linux kernel headers...",
        "Compiling NVIDIA driver kernel modules...",
        "/usr/src/nvidia-450.80.02/kernel/nvidia-drm/nvidia-drm-gem-user-memory.c: In function "
        "'__nv_drm_gem_user_memory_prime_get_sg_table':",
        "/usr/src/nvidia-450.80.02/kernel/nvidia-drm/nvidia-drm-gem-user-memory.c:63:48: error: "
        "passing argument 1 of 'drm_prime_pages_to_sg' from incompatible pointer type "
        "[-Werror=incompatible-pointer-types]",
        "Stopping NVIDIA persistence daemon...",
    ])
    assert (result.line, result.level) == (4, Level.COMPILER)
    assert result.step is not None
    assert result.step.excerpt == "Compiling NVIDIA driver kernel modules..."


def test_harmless_wordings_are_skipped_and_named() -> None:
    conflict = harmless()[0].examples[0]
    real = ('{"level":"error","ts":1646818726.1,"msg":"Reconciler error","error":"failed to '
            'get node labels"}')
    result = found([conflict, real], container="gpu-operator")
    assert result.line == 2
    assert result.skipped == ("apiserver-update-conflict",)
    assert first_error_of(log([conflict], container="gpu-operator")) is None


def test_harmless_entries_limited_to_containers_apply_only_there() -> None:
    line = harmless()[1].examples[0]
    assert first_error_of(log([line], container="nvidia-container-toolkit-ctr")) is None
    other = first_error_of(log([line], container="nvidia-driver-ctr"))
    assert other is not None and other.level is Level.PREFIX


def test_every_harmless_entry_has_a_public_source_and_matches_its_examples() -> None:
    entries = harmless()
    assert len({e.id for e in entries}) == len(entries)
    for entry in entries:
        assert re.match(r"https://\S+$", entry.source), entry.id
        assert entry.why and entry.examples, entry.id
        for example in entry.examples:
            assert entry.pattern.search(example), (entry.id, example)


def test_wording_that_negates_an_error_is_not_one() -> None:
    assert first_error_of(log(["Build finished with 0 errors", "no errors found"])) is None
    assert found(["All done", "mount failed: device busy"]).line == 2


def test_quote_names_file_and_line() -> None:
    result = found(["ok", "panic: assignment to entry in nil map"],
                   container="nvidia-dcgm-exporter")
    assert result.quote() == ("'panic: assignment to entry in nil map' (logs/gpu-operator/"
                              "nvidia-driver-daemonset-x1/nvidia-dcgm-exporter.log line 2)")


def test_facts_read_previous_before_current_and_init_containers_first(tmp_path: Path) -> None:
    cluster = Cluster(gpu_nodes=("gpu-a",))
    app = "nvidia-driver-daemonset"
    cluster.log(app, "gpu-a", "nvidia-driver-ctr", ["Resolving Linux kernel version...",
                                                   "Could not resolve Linux kernel version"],
                previous=True)
    cluster.log(app, "gpu-a", "nvidia-driver-ctr", ["Stopping NVIDIA persistence daemon...",
                                                   "ERROR: Failed to update the NVIDIA driver"])
    path = write_dir(tmp_path / "bundle", cluster.bundle_files())
    with open_bundle(path) as bundle:
        facts = Facts(bundle)
        pod = facts.pods_by_key[("gpu-operator", pod_name(app, "gpu-a"))]
        first = facts.first_error(pod)
        assert first is not None and first.previous
        assert (first.path, first.line) == (
            f"logs/gpu-operator/{pod.name}/nvidia-driver-ctr.previous.log", 2)
        assert first.step is not None and first.step.line == 1
        assert facts.first_error(pod) is first  # read once
        assert facts.first_error(pod, "k8s-driver-manager") is None  # no log of its own
        current = facts.first_error(pod, "nvidia-driver-ctr")
        assert current is not None and current.previous
