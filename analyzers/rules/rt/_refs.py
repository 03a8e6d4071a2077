"""RT006 and RT007: references that point at nothing — CDI specs and runtime handlers."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.runtimes import Cause
from analyzers.refs import Link
from analyzers.rule import Context
from analyzers.rules.common import PRESENT
from bundle import specs
from bundle.manifest import ManifestItem


class _ItemsByPath:
    """The manifest's items sorted by path once: the items whose path starts with a
    prefix are then one range of the sorted list, not a walk over every item of the
    bundle (one per collected file) for every node."""

    def __init__(self, items: Sequence[ManifestItem]) -> None:
        self._sorted = sorted(enumerate(items), key=lambda pair: pair[1].path)
        self._paths = [item.path for _, item in self._sorted]

    def under(self, prefix: str) -> list[ManifestItem]:
        """The items whose path starts with ``prefix``, in manifest order."""
        start = end = bisect.bisect_left(self._paths, prefix)
        while end < len(self._paths) and self._paths[end].startswith(prefix):
            end += 1
        return [item for _, item in sorted(self._sorted[start:end], key=lambda p: p[0])]


def _cdi_collected(ctx: Context, items: _ItemsByPath, node_name: str) -> bool:
    return bool(items.under(specs.node_file(node_name, specs.CDI_DIR).rstrip("/"))) or \
        bool(ctx.facts.node(node_name).cdi_files)


def _cause_link(ctx: Context, node_name: str) -> list[Link]:
    cause = ctx.facts.runtime_cause(node_name)
    policy = ctx.facts.cluster_policy
    if cause is Cause.TOOLKIT_DISABLED and policy is not None:
        return [refs.link("CFG004", policy.metadata.name)]
    if node_name in ctx.facts.node_dirs and ctx.facts.node(node_name).nvidia_smi is None:
        # A CDI spec is generated from the loaded driver: with no usable driver there
        # is none to generate (DRV003/DRV004 say why, when they fire).
        return [refs.link("DRV003", node_name), refs.link("DRV004", node_name)]
    return []


def _not_gpu_node(ctx: Context, node_name: str) -> bool:
    """The policy runs the toolkit, but the operator has not marked the node a GPU node,
    so it deployed no toolkit there (OP003 says why, when NFD's label is missing)."""
    obj = ctx.facts.nodes.get(node_name)
    return obj is not None and obj.labels.get(PRESENT) != "true" and \
        ctx.facts.toolkit_enabled()


def _loaded_handlers(ctx: Context, node_name: str) -> tuple[frozenset[str], str] | None:
    """The runtime handlers a node's runtime has loaded, and the file that says so: CRI-O's
    loaded configuration on CRI-O nodes, containerd's on the others (None: not known; on
    Docker nodes containerd's configuration is not what runs pods, see RT015)."""
    if ctx.facts.node_runtime(node_name).runtime == "docker":
        return None
    if ctx.facts.node_runtime(node_name).runtime == "cri-o":
        found = ctx.facts.runtime_gate.get(node_name)
        crio = found.crio if found is not None else None
        if crio is None or crio.handlers is None:
            return None
        return crio.handlers, crio.dump_path
    state = ctx.facts.runtime(node_name)
    return (state.loaded, state.dump_path) if state.loaded is not None else None


def _runtime_word(ctx: Context, nodes: list[str]) -> str:
    crio = any(ctx.facts.node_runtime(n).runtime == "cri-o" for n in nodes)
    return "runtime" if crio else "containerd"


_RUNTIME_CLASSES = sh.lines(
    "kubectl get runtimeclass -o custom-columns=NAME:.metadata.name,HANDLER:.handler",
    "# on a GPU node, the runtimes its containerd loaded:",
    "# containerd config dump | grep 'runtimes\\.'",
    "# create the missing RuntimeClass, or fix the node's container runtime configuration",
)


def _cdi_remediation(node_name: str) -> str:
    node = sh.node(node_name)
    return sh.lines(
        sh.node_shell(node),
        "ls -l /var/run/cdi /etc/cdi",
        "nvidia-smi --query-gpu=driver_version --format=csv,noheader",
        "# the toolkit pod on this node writes the management spec: is it running? After a",
        "# driver change, regenerate a host spec:",
        "# nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml",
    )
