"""Which bundle files each fact a rule reads stands for.

A rule declares its ``inputs`` (``analyzers.rule.Input``): the engine skips it, or says
``partial``, when they are missing or damaged. A rule reaches the bundle only through
facts (``ctx.facts``, ``ctx.facts.node(name)``), so what it reads is named by the facts
it uses; these tables say which files stand behind each of them, and
tests/test_one_door.py checks every rule's inputs cover the facts it reads.
"""

from __future__ import annotations

from bundle import specs

# NodeFacts attribute → node paths (relative to ``nodes/<name>/``) it reads.
NODE: dict[str, tuple[str, ...]] = {
    "config_dump": (specs.CONTAINERD_DUMP,),
    "config_dump_text": (specs.CONTAINERD_DUMP,),
    "containerd_version": (specs.CONTAINERD_VERSION,),
    "containerd_files": (specs.CONTAINERD_FILES,),
    "cdi_files": (specs.CDI_ANY,),
    "cdi_specs": (specs.CDI_ANY,),
    "cdi_drivers": (specs.CDI_ANY,),
    "nvidia_smi": (specs.NVIDIA_SMI,),
    "gpu_issues": (specs.NVIDIA_SMI,),
    "smi_line": (specs.NVIDIA_SMI,),
    "gpu_processes": (specs.GPU_PROCESSES,),
    "systemd_containerd": (specs.SYSTEMD_CONTAINERD,),
    "systemd_unit": (specs.SYSTEMD_ANY,),
    "lspci": (specs.LSPCI,),
    "kernel_release": (specs.UNAME,),
    "modules": (specs.MODULES,),
    "secure_boot": (specs.SECUREBOOT,),
    "nvidia_ctk": (specs.NVIDIA_CTK,),
    "docker_daemon": (specs.DOCKER_DAEMON_JSON,),
    "device_access": (specs.CGROUP, specs.DEV_NVIDIA),
    "journal": (specs.JOURNALS,),
    "kernel": (specs.DMESG, specs.JOURNALS),
}

# Facts attribute → bundle paths it reads (node paths as ``nodes/*/<path>``): the facts
# a rule reads for its own judgement. The ones every rule may consult (``gpu_nodes``,
# ``operator_namespace``, each node's CRI ...) are not listed.
FACTS: dict[str, tuple[str, ...]] = {
    "pods": (specs.PODS,),
    "pods_by_node": (specs.PODS,),
    "pods_by_key": (specs.PODS,),
    "pods_by_namespace": (specs.PODS,),
    "pending_gpu_pods": (specs.PODS,),
    "accounting": (specs.NODES, specs.PODS),
    "events": (specs.EVENTS,),
    "events_by_object": (specs.EVENTS,),
    "events_for": (specs.EVENTS,),
    "events_with": (specs.EVENTS,),
    "pod_events": (specs.EVENTS,),
    "pod_events_with": (specs.EVENTS,),
    "runtimeclasses": (specs.RUNTIMECLASSES,),
    "refused_daemonsets": (specs.DAEMONSETS,),
    "cluster_policy": (specs.CLUSTERPOLICIES,),
    "gpu_sharing": (specs.CONFIGMAPS,),
    "mig_configs": (specs.CONFIGMAPS,),
    "helm_releases": (specs.HELM_RELEASES,),
    "gpu_quotas": (specs.RESOURCEQUOTAS,),
    "container_log": (specs.LOGS_ANY,),
    "daemonsets": (specs.DAEMONSETS,),
    "clusterpolicies": (specs.CLUSTERPOLICIES,),
    "crds": (specs.CRDS,),
    "pod_logs": (specs.LOGS_ANY,),
    "kernel_events": (specs.any_node(specs.DMESG), specs.any_node(specs.JOURNALS)),
    "oom_kills": (specs.any_node(specs.DMESG),),
    "inventory": (specs.DAEMONSETS, specs.DEPLOYMENTS, specs.PODS),
}
