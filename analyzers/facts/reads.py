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
    "nvidia_smi": (specs.NVIDIA_SMI,),
    "smi_line": (specs.NVIDIA_SMI,),
    "gpu_processes": (specs.GPU_PROCESSES,),
    "systemd_containerd": (specs.SYSTEMD_CONTAINERD,),
    "systemd_unit": (specs.SYSTEMD_ANY,),
    "lspci": (specs.LSPCI,),
    "modules": (specs.MODULES,),
    "secure_boot": (specs.SECUREBOOT,),
    "nvidia_ctk": (specs.NVIDIA_CTK,),
    "docker_daemon": (specs.DOCKER_DAEMON_JSON,),
    "device_access": (specs.CGROUP, specs.DEV_NVIDIA),
    "journal": (specs.JOURNALS,),
    "kernel": (specs.DMESG, specs.JOURNALS),
}

# Facts attribute → cluster paths it reads (the ones a rule reads for itself; the facts
# every rule may consult, such as ``gpu_nodes``, are not listed).
CLUSTER: dict[str, tuple[str, ...]] = {
    "pods": (specs.PODS,),
    "events": (specs.EVENTS,),
    "runtimeclasses": (specs.RUNTIMECLASSES,),
    "helm_releases": (specs.HELM_RELEASES,),
    "gpu_quotas": (specs.RESOURCEQUOTAS,),
    "container_log": (specs.LOGS_ANY,),
    "daemonsets": (specs.DAEMONSETS,),
    "clusterpolicies": (specs.CLUSTERPOLICIES,),
    "crds": (specs.CRDS,),
}
