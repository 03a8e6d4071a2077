#!/usr/bin/env python3
"""Generate the sample support bundles under samples/.

    .venv/bin/python samples/build_samples.py            # (re)write every sample
    .venv/bin/python samples/build_samples.py --check    # exit 1 if a committed sample differs

Each scenario is one function below that builds a ``Scene`` (see samplekit/)
and writes it as a bundle directory in the format of bundle-format.md. Output
is deterministic: fixed clocks, uuid5 uids, sorted keys, no random state.
``containerd config dump`` output is real: it is produced by running the
installed containerd (Debian 1.6.20) on each node's configuration files, so
the generator needs that binary (it stops with exit code 2 without it).

Adding a scenario: write a function ``(root: Path) -> None`` and list it in
SCENARIOS.
"""

from __future__ import annotations

import argparse
import datetime as dt
import filecmp
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# The sample modules import as samples.<module>, from the repository root, wherever
# they run (tests, python -m samples.synth). Run as a file, this script would find them
# through samples/ itself, which Python puts first on sys.path: that entry becomes
# the repository root instead, so there is one way to import them.
if not __package__:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from samples.samplekit import containerd, gpuop, host, journal, oplogs
from samples.samplekit.core import at, k8s_suffix, plus
from samples.samplekit.k8s import (
    event_scheduler,
    meta,
    pod_obj,
    status_unschedulable,
)
from samples.samplekit.lab import (
    GPU_OPERANDS,
    HELM_INSTALL,
    HELM_UPGRADE,
    OPERANDS_CREATED,
    STUCK_STATES,
    add_cuda_validator,
    add_nodes,
    add_operator_pod,
    base_journals,
    containerd_started,
    cuda_test_spec,
    emit,
    enabled_statuses,
    install_operator,
    lab_scene,
    node_writer,
)
from samples.samplekit.model import Host
from samples.samplekit.scene import LogLine
from samples.samplekit.workloads import (
    Ran,
    Stuck,
    Template,
    add_daemonset,
    daemonset_pod_uid,
    place_pod,
    retry_times,
)
from samples.scenarios_causes import (
    crd_older_than_chart,
    driver_build_no_headers,
    driver_too_old_for_gpu,
    gpus_seen_unallocated,
    host_driver_under_container,
    mig_reconfigure_busy,
    smi_no_devices,
    vfio_bound_gpus,
)
from samples.scenarios_distro import (
    k0s_toolkit_default_paths,
    k3s_toolkit_default_config,
    microk8s_toolkit_edits_generated_config,
    openshift_crio_no_nvidia_handler,
    rke2_template_go_directives,
)
from samples.scenarios_generic import (
    driver_build_compile_error,
    exporter_oomkilled,
    plugin_daemonset_refused,
)
from samples.scenarios_labels_fabric import hgx_nvswitch_sxid, nfd_not_labelling
from samples.scenarios_node import (
    app_xids_only,
    driver_upgrade_failed,
    h100_ecc_row_remap,
    hgx_no_fabricmanager,
    nouveau_loaded,
    secureboot_dkms_refused,
    xid79_fallen_off_bus,
)
from samples.scenarios_numbers import (
    mig_mixed,
    sched_full,
    sched_not_advertised,
    sched_quota,
    sched_taint,
    sched_too_big,
    sched_unhealthy,
    timeslicing,
)
from samples.scenarios_rootcause import dcgm_profiling_crashloop
from samples.scenarios_runtime import dropin_clobber, helm_dropped_values

HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------------------- scenarios

FAILED_SCHEDULING = (
    "0/5 nodes are available: 1 node(s) had untolerated taint "
    "{node-role.kubernetes.io/control-plane: }, 4 Insufficient nvidia.com/gpu. "
    "preemption: 0/5 nodes are available: 1 Preemption is not helpful for scheduling, "
    "4 No preemption victims found for incoming pod."
)


def incident_toolkit_disabled(root: Path) -> None:
    """Toolkit disabled on a fresh containerd: every GPU operand stuck in Init,
    FailedCreatePodSandBox 'no runtime for "nvidia" is configured'."""
    created = at("2026-11-20T09:30:00Z")
    scene = lab_scene(created)
    install_operator(scene)
    gpu_hosts = scene.gpu_hosts()
    templates = gpuop.operand_templates()
    for name in GPU_OPERANDS:
        add_daemonset(
            scene,
            templates[name],
            created=OPERANDS_CREATED,
            owners=gpuop.cluster_policy_owner(),
            pods={
                h.name: Stuck(plus(OPERANDS_CREATED, 0.05 + 0.02 * i))
                for i, h in enumerate(gpu_hosts)
            },
        )
    for name in ("nvidia-device-plugin-mps-control-daemon", "nvidia-mig-manager"):
        add_daemonset(
            scene,
            templates[name],
            created=OPERANDS_CREATED,
            owners=gpuop.cluster_policy_owner(),
            pods={},
        )

    statuses = enabled_statuses(STUCK_STATES, None)
    op_log = oplogs.operator_startup(plus(HELM_INSTALL, 10.6))
    op_log += oplogs.reconcile(plus(HELM_INSTALL, 16.3), scene.hosts, statuses, first=True)
    op_log += oplogs.reconcile(plus(created, -2.7), scene.hosts, statuses)
    add_operator_pod(scene, op_log)
    scene.clusterpolicies.append(
        gpuop.cluster_policy(
            created=plus(HELM_INSTALL, 1.7),
            toolkit=False,
            generation=1,
            ready=False,
            since=plus(HELM_INSTALL, 16.4),
            not_ready_states=STUCK_STATES,
        )
    )
    scene.helm["gpu-operator"] = [
        gpuop.helm_revision(
            1,
            "deployed",
            HELM_INSTALL,
            "Install complete",
            {"driver": {"enabled": False}, "toolkit": {"enabled": False}},
        )
    ]

    # the user's test pod: no node advertises nvidia.com/gpu
    test_created = at("2026-11-20T09:29:05Z")
    spec = cuda_test_spec()
    pod = pod_obj(
        meta("Pod", "cuda-test", "default", created=test_created),
        spec,
        status_unschedulable(spec, test_created, FAILED_SCHEDULING),
    )
    scene.pods.append(pod)
    scene.events.append(
        event_scheduler(
            pod,
            "FailedScheduling",
            FAILED_SCHEDULING,
            first=test_created,
            action="Scheduling",
            warning=True,
            series=(2, plus(test_created, 41.3)),
        )
    )
    scene.log("default", "cuda-test", "cuda", [])  # unscheduled: kubectl logs prints nothing

    add_nodes(scene, gfd_at=None, heartbeat=plus(created, -7))
    config = containerd.fresh_config()

    def state(h: Host, now: dt.datetime) -> host.NodeState:
        ctd, kubelet = base_journals(scene, h)
        attempts = scene.sandbox_attempts.get(h.name, [])
        journal.containerd_sandbox_lines(ctd, attempts, lambda _t: h.containerd_pid)
        journal.kubelet_sandbox_failures(kubelet, attempts)
        return host.NodeState(
            h,
            config_files={containerd.MAIN: config},
            containerd_journal=ctd,
            kubelet_journal=kubelet,
            containerd_pid=h.containerd_pid,
            containerd_started=containerd_started(h),
            restarts=0,
            cdi_files={},
            smi_at=now,
        )

    node_writer(scene, state)
    emit(scene, root)


@dataclass
class NodePlan:
    """How one GPU node recovers once the toolkit runs (healthy sample)."""

    toolkit: Ran
    toolkit_logs: dict[str, list[LogLine]]
    sighup: dt.datetime
    containerd_up: dt.datetime
    containerd_pid: int
    operands: dict[str, Ran] = field(default_factory=dict)
    operand_logs: dict[str, dict[str, list[LogLine]]] = field(default_factory=dict)
    cuda_validator: tuple[str, Ran] | None = None


def stuck_then_ran(
    tpl: Template, h: Host, scheduled: dt.datetime, up: dt.datetime
) -> tuple[dt.datetime, dt.datetime]:
    """kubelet's retries for a pod stuck since ``scheduled``: the first attempt,
    and the first attempt after containerd came back with the nvidia runtime."""
    tries = retry_times(scheduled, plus(up, 30), daemonset_pod_uid(tpl, h.name))
    return tries[0], next(t for t in tries if t >= up)


def plan_recovery(h: Host, i: int, created: dt.datetime, tpl: dict[str, Template]) -> NodePlan:
    """Toolkit pod, SIGHUP, containerd restart, then the operands in the order
    the validation files gate them (driver, toolkit, cuda, plugin)."""
    gpu = h.gpu
    assert gpu is not None
    sched = plus(HELM_UPGRADE, 1.3 + 0.03 * i)
    init = (plus(sched, 6.8), plus(sched, 8.4))
    main = plus(sched, 17.9 + 0.6 * i)
    ctr_log, sighup = oplogs.toolkit_ctr(plus(main, 0.2))
    up = plus(sighup, 5.014)
    plan = NodePlan(
        toolkit=Ran(sched, plus(sched, 0.4), (init,), main, ready=plus(main, 1)),
        toolkit_logs={
            "driver-validation": oplogs.driver_validation(init[0], gpu),
            "nvidia-container-toolkit-ctr": ctr_log,
        },
        sighup=sighup,
        containerd_up=up,
        containerd_pid=h.containerd_pid + 43211 + 17 * i,
    )
    scheduled = plus(OPERANDS_CREATED, 0.05 + 0.02 * i)  # as in the incident

    validator = tpl["nvidia-operator-validator"]
    v_first, v_box = stuck_then_ran(validator, h, scheduled, up)
    drv = (plus(v_box, 0.6), plus(v_box, 1.9))
    tk = (plus(drv[1], 0.3), plus(drv[1], 1.4))  # writes toolkit-ready
    plugin_at = None
    for name in ("nvidia-device-plugin-daemonset", "gpu-feature-discovery", "nvidia-dcgm-exporter"):
        first, box = stuck_then_ran(tpl[name], h, scheduled, up)
        wait_start = wait_end = plus(box, 0.6)
        while wait_end < tk[1]:
            wait_end = plus(wait_end, 5.004)
        start = plus(wait_end, 4.5 + i * 0.3)  # pulls its image first
        plan.operands[name] = Ran(
            scheduled,
            box,
            ((wait_start, wait_end),),
            start,
            ready=plus(start, 1),
            stuck_since=first,
            stuck_until=sighup,
        )
        logs = {"toolkit-validation": oplogs.wait_for_toolkit(wait_start, wait_end)}
        main_name = tpl[name].spec["containers"][0]["name"]
        if name == "nvidia-device-plugin-daemonset":
            plugin_at = plus(start, 0.09)
            logs[main_name] = oplogs.device_plugin(start)
        elif name == "gpu-feature-discovery":
            logs[main_name] = oplogs.gfd(start, created)
        else:
            logs[main_name] = oplogs.dcgm_exporter(start)
        plan.operand_logs[name] = logs
    assert plugin_at is not None

    cuda = (plus(tk[1], 0.2), plus(tk[1], 5.9))
    cuda_pod = f"nvidia-cuda-validator-{k8s_suffix(5, 'cuda-validator', h.name)}"
    plan.cuda_validator = (
        cuda_pod,
        Ran(
            plus(cuda[0], 0.1),
            plus(cuda[0], 0.5),
            ((plus(cuda[0], 1.1), plus(cuda[0], 2.6)),),
            plus(cuda[0], 2.9),
            main_end=plus(cuda[0], 3.0),
        ),
    )
    plugin = (plus(cuda[1], 0.2), max(plus(cuda[1], 1.2), plus(plugin_at, 5.1)))
    v_main = plus(plugin[1], 0.3)
    plan.operands[validator.name] = Ran(
        scheduled,
        v_box,
        (drv, tk, cuda, plugin),
        v_main,
        ready=plus(v_main, 1),
        stuck_since=v_first,
        stuck_until=sighup,
    )
    plan.operand_logs[validator.name] = {
        "driver-validation": oplogs.driver_validation(drv[0], gpu),
        "toolkit-validation": oplogs.toolkit_validation(tk[0], gpu),
        "cuda-validation": oplogs.cuda_validation(cuda[0], cuda_pod),
        "plugin-validation": oplogs.plugin_validation(plugin[0]),
        "nvidia-operator-validator": [LogLine(v_main, "all validations are successful")],
    }
    return plan


def last_gfd_run(start: dt.datetime, before: dt.datetime) -> dt.datetime:
    """GFD relabels every 60 s (plus its own run time); the last run before ``before``."""
    period = oplogs.GFD_PERIOD
    n = int(((before - start).total_seconds() - 0.05) // period)
    return plus(start, 0.05 + n * period)


def healthy_toolkit_enabled(root: Path) -> None:
    """The same cluster after `helm upgrade --reuse-values --set toolkit.enabled=true`."""
    created = at("2026-11-20T11:05:00Z")
    scene = lab_scene(created)
    install_operator(scene)
    gpu_hosts = scene.gpu_hosts()
    tpl = gpuop.operand_templates()
    owners = gpuop.cluster_policy_owner()
    plans = {h.name: plan_recovery(h, i, created, tpl) for i, h in enumerate(gpu_hosts)}

    add_daemonset(
        scene,
        tpl["nvidia-container-toolkit-daemonset"],
        created=plus(HELM_UPGRADE, 1.2),
        owners=owners,
        pods={n: p.toolkit for n, p in plans.items()},
        logs={n: p.toolkit_logs for n, p in plans.items()},
    )
    for name in GPU_OPERANDS:
        add_daemonset(
            scene,
            tpl[name],
            created=OPERANDS_CREATED,
            owners=owners,
            pods={n: p.operands[name] for n, p in plans.items()},
            logs={n: p.operand_logs[name] for n, p in plans.items()},
        )
    for name in ("nvidia-device-plugin-mps-control-daemon", "nvidia-mig-manager"):
        add_daemonset(scene, tpl[name], created=OPERANDS_CREATED, owners=owners, pods={})
    for h in gpu_hosts:
        validator_pod = plans[h.name].cuda_validator
        assert validator_pod is not None
        add_cuda_validator(scene, h, *validator_pod)

    validated = max(p.operands["nvidia-operator-validator"].main_start for p in plans.values())
    ready_at = plus(validated, 3.4)
    stuck = enabled_statuses(STUCK_STATES, None)
    op_log = oplogs.operator_startup(plus(HELM_INSTALL, 10.6))
    op_log += oplogs.reconcile(plus(HELM_INSTALL, 16.3), scene.hosts, stuck, first=True)
    op_log += oplogs.reconcile(
        plus(HELM_UPGRADE, 1.1),
        scene.hosts,
        enabled_statuses(STUCK_STATES, "ready"),
        creating=("nvidia-container-toolkit-daemonset",),
    )
    op_log += oplogs.reconcile(ready_at, scene.hosts, enabled_statuses([], "ready"))
    add_operator_pod(scene, op_log)
    scene.clusterpolicies.append(
        gpuop.cluster_policy(
            created=plus(HELM_INSTALL, 1.7), toolkit=True, generation=2, ready=True, since=ready_at
        )
    )
    scene.helm["gpu-operator"] = [
        gpuop.helm_revision(
            1,
            "superseded",
            HELM_INSTALL,
            "Install complete",
            {"driver": {"enabled": False}, "toolkit": {"enabled": False}},
        ),
        gpuop.helm_revision(
            2,
            "deployed",
            HELM_UPGRADE,
            "Upgrade complete",
            {"driver": {"enabled": False}, "toolkit": {"enabled": True}},
        ),
    ]

    # the user re-created the test pod to check the fix; the scheduler put it on gpu-b
    gpu_b = scene.host("gpu-b")
    assert gpu_b.gpu is not None
    test_created = at("2026-11-20T10:57:31Z")
    run = Ran(
        plus(test_created, 0.02),
        plus(test_created, 0.4),
        (),
        plus(test_created, 9.6),
        main_end=plus(test_created, 9.9),
    )
    smi = oplogs.smi_table(gpu_b.gpu, plus(run.main_start, 0.1))
    place_pod(
        scene,
        gpu_b,
        metadata=meta("Pod", "cuda-test", "default", created=test_created, incarnation="2"),
        spec=cuda_test_spec(),
        outcome=run,
        logs={"cuda": [LogLine(plus(run.main_start, 0.2), line) for line in smi]},
    )

    gfd_at = {
        n: last_gfd_run(p.operands["gpu-feature-discovery"].main_start, plus(created, -3))
        for n, p in plans.items()
    }
    add_nodes(scene, gfd_at=gfd_at, heartbeat=plus(created, -7))

    config = containerd.fresh_config()
    files = containerd.toolkit_files(config, containerd.config_dump({containerd.MAIN: config}))

    def state(h: Host, now: dt.datetime) -> host.NodeState:
        p = plans[h.name]
        ctd, kubelet = base_journals(scene, h)
        attempts = scene.sandbox_attempts.get(h.name, [])
        journal.containerd_sandbox_lines(
            ctd, attempts, lambda t: h.containerd_pid if t < p.sighup else p.containerd_pid
        )
        shims = [h.containerd_pid + 900 + 37 * k for k in range(3)]
        journal.containerd_killed_by_sighup(
            ctd, p.sighup, h.containerd_pid, p.containerd_pid, shims
        )
        journal.kubelet_sandbox_failures(kubelet, attempts)
        journal.kubelet_runtime_gap(kubelet, plus(p.sighup, 1.7))
        journal.kubelet_plugin_registered(
            kubelet, plus(p.operands["nvidia-device-plugin-daemonset"].main_start, 0.09)
        )
        assert h.gpu is not None
        cdi = {
            "k8s.device-plugin.nvidia.com-gpu.json": host.cdi_device_plugin_json(h.gpu),
            "management.nvidia.com-gpu.yaml": host.cdi_management_yaml(),
        }
        return host.NodeState(
            h,
            config_files=files,
            containerd_journal=ctd,
            kubelet_journal=kubelet,
            containerd_pid=p.containerd_pid,
            containerd_started=p.containerd_up,
            restarts=1,
            cdi_files=cdi,
            smi_at=now,
        )

    node_writer(scene, state)
    emit(scene, root)


# ----------------------------------------------------------------------------- driver

SCENARIOS: dict[str, Callable[[Path], None]] = {
    "incident-toolkit-disabled": incident_toolkit_disabled,
    "healthy-toolkit-enabled": healthy_toolkit_enabled,
    "dropin-clobber": dropin_clobber,
    "helm-dropped-values": helm_dropped_values,
    "sched-full": sched_full,
    "sched-unhealthy": sched_unhealthy,
    "sched-not-advertised": sched_not_advertised,
    "sched-too-big": sched_too_big,
    "sched-taint": sched_taint,
    "sched-quota": sched_quota,
    "timeslicing": timeslicing,
    "mig-mixed": mig_mixed,
    "xid79-fallen-off-bus": xid79_fallen_off_bus,
    "app-xids-only": app_xids_only,
    "h100-ecc-row-remap": h100_ecc_row_remap,
    "nouveau-loaded": nouveau_loaded,
    "secureboot-dkms-refused": secureboot_dkms_refused,
    "hgx-no-fabricmanager": hgx_no_fabricmanager,
    "driver-upgrade-failed": driver_upgrade_failed,
    "dcgm-profiling-crashloop": dcgm_profiling_crashloop,
    "k3s-toolkit-default-config": k3s_toolkit_default_config,
    "rke2-template-go-directives": rke2_template_go_directives,
    "k0s-toolkit-default-paths": k0s_toolkit_default_paths,
    "microk8s-toolkit-edits-generated-config": microk8s_toolkit_edits_generated_config,
    "openshift-crio-no-nvidia-handler": openshift_crio_no_nvidia_handler,
    "host-driver-under-container": host_driver_under_container,
    "driver-build-no-headers": driver_build_no_headers,
    "vfio-bound-gpus": vfio_bound_gpus,
    "driver-too-old-for-gpu": driver_too_old_for_gpu,
    "mig-reconfigure-busy": mig_reconfigure_busy,
    "smi-no-devices": smi_no_devices,
    "gpus-seen-unallocated": gpus_seen_unallocated,
    "crd-older-than-chart": crd_older_than_chart,
    "nfd-not-labelling": nfd_not_labelling,
    "hgx-nvswitch-sxid": hgx_nvswitch_sxid,
    "driver-build-compile-error": driver_build_compile_error,
    "exporter-oomkilled": exporter_oomkilled,
    "plugin-daemonset-refused": plugin_daemonset_refused,
}


def build(target: Path) -> None:
    """Write every scenario under ``target`` (which must not hold them yet)."""
    containerd.version_text()  # fail before writing anything without the right containerd
    for name, scenario in SCENARIOS.items():
        root = target / name
        root.mkdir(parents=True)
        scenario(root)


def differences(a: Path, b: Path) -> list[str]:
    """Relative paths that are missing on one side or differ in content."""
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    out = [f"only in {a.name}: {p}" for p in sorted(files_a - files_b)]
    out += [f"only in {b.name}: {p}" for p in sorted(files_b - files_a)]
    out += [
        f"differs: {p}"
        for p in sorted(files_a & files_b)
        if not filecmp.cmp(a / p, b / p, shallow=False)
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary directory and compare with the committed samples",
    )
    args = parser.parse_args(argv)
    problems: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="samples-") as tmp:
            build(Path(tmp))
            for name in SCENARIOS:
                if args.check:
                    problems += [f"{name}: {d}" for d in differences(HERE / name, Path(tmp) / name)]
                else:  # replace the committed sample only once the new one is complete
                    shutil.rmtree(HERE / name, ignore_errors=True)
                    shutil.copytree(Path(tmp) / name, HERE / name)
    except containerd.ContainerdUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.check:
        print(f"wrote {', '.join(SCENARIOS)} under {HERE}", file=sys.stderr)
        return 0
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print("samples are stale: run .venv/bin/python samples/build_samples.py", file=sys.stderr)
        return 1
    print("samples are up to date", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
