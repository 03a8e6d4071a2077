"""The kinds ``serve`` answers for: where each lives in the API and in the bundle.

Every kind a bundle can hold (docs/bundle-format.md, ``cluster/*.json``) is listed in
discovery whether or not this bundle holds it: asking for one it lacks answers 404 with
a ``Status`` that says the bundle did not collect it, rather than kubectl's "the server
doesn't have a resource type", which would hide whether the cluster has it. ReplicaSets,
which no bundle collects, are listed too, as empty lists with a ``Warning`` saying so:
``kubectl describe deployment`` lists them and gives up on a 404.
"""

from __future__ import annotations

from dataclasses import dataclass

from bundle import specs


@dataclass(frozen=True)
class Kind:
    resource: str  # plural, as in the URL
    group: str
    version: str
    kind: str
    namespaced: bool
    path: str  # the bundle file that holds the list
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # False: no bundle holds it; listed as empty, with a warning, because kubectl needs
    # the list to answer (``describe deployment`` lists the ReplicaSets and fails on a 404)
    collected: bool = True

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """``pods``, ``daemonsets.apps``: how kubectl names the resource in messages."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


KINDS: tuple[Kind, ...] = (
    Kind("nodes", "", "v1", "Node", False, specs.NODES, ("no",)),
    Kind("namespaces", "", "v1", "Namespace", False, specs.NAMESPACES, ("ns",)),
    Kind("pods", "", "v1", "Pod", True, specs.PODS, ("po",), ("all",)),
    Kind("events", "", "v1", "Event", True, specs.EVENTS, ("ev",)),
    Kind("configmaps", "", "v1", "ConfigMap", True, specs.CONFIGMAPS, ("cm",)),
    Kind("resourcequotas", "", "v1", "ResourceQuota", True, specs.RESOURCEQUOTAS,
         ("quota",)),
    Kind("daemonsets", "apps", "v1", "DaemonSet", True, specs.DAEMONSETS, ("ds",),
         ("all",)),
    Kind("deployments", "apps", "v1", "Deployment", True, specs.DEPLOYMENTS,
         ("deploy",), ("all",)),
    Kind("replicasets", "apps", "v1", "ReplicaSet", True, "", ("rs",), ("all",),
         collected=False),
    Kind("runtimeclasses", "node.k8s.io", "v1", "RuntimeClass", False,
         specs.RUNTIMECLASSES),
    Kind("customresourcedefinitions", "apiextensions.k8s.io", "v1", "CustomResourceDefinition",
         False, specs.CRDS, ("crd", "crds")),
    Kind("clusterpolicies", "nvidia.com", "v1", "ClusterPolicy", False,
         specs.CLUSTERPOLICIES),
    Kind("nvidiadrivers", "nvidia.com", "v1alpha1", "NVIDIADriver", False,
         specs.NVIDIADRIVERS),
)
BY_PATH: dict[tuple[str, str, str], Kind] = {(k.group, k.version, k.resource): k for k in KINDS}


def group_versions() -> dict[str, list[str]]:
    """Group → its versions, in the order of :data:`KINDS` (the core group is ``""``)."""
    found: dict[str, list[str]] = {}
    for kind in KINDS:
        versions = found.setdefault(kind.group, [])
        if kind.version not in versions:
            versions.append(kind.version)
    return found
