"""Whether a known-issue entry's context holds on one node, as far as the bundle shows.

Each condition of :class:`analyzers.knowledge.known_issues.Context` is read from what the
bundle holds about the node, and is one of three: it holds, it fails (the entry does not
apply: the diagnosis is never made), or the bundle does not show it (the entry may
apply: the rule says *likely*, never *confirmed*). Where each value comes from:

- ``operator``: the operator's image tag or chart (:mod:`analyzers.facts.operator_version`);
- ``driver``: ``nvidia-smi``'s driver version, else GFD's driver-version labels, else the
  tag of the driver container's image on the node;
- ``toolkit`` / ``device_plugin``: the tag of that component's image on the node;
- ``dcgm_exporter``: the DCGM release leading the exporter image's tag on the node;
- ``containerd``: ``containerd --version``, else the kubelet's runtime version;
- ``kernel``: ``uname``, else the kubelet's kernel version;
- ``kubernetes``: the kubelet's version, else the API server's;
- ``distribution``: the node's Kubernetes distribution (k3s, RKE2, OpenShift, ...) or its
  OS (the ``ID`` of ``os-release`` or NFD's ``system-os_release.ID`` label: ubuntu, rhel,
  amzn, talos, bottlerocket, cos ...); either one named by the entry holds;
- ``cri``: the runtime the kubelet talks to;
- ``gpu_family``: for architectures (ampere, hopper ...) GFD's ``nvidia.com/gpu.family``
  label, else not shown; for product lines (geforce, quadro ...) the product brand and
  name of ``nvidia-smi`` or the ``nvidia.com/gpu.product`` label;
- ``cloud``: the node's ``providerID`` scheme (aws, gce, azure) and the managed
  service's node labels (eks, gke, aks);
- ``pods``: the names of the pods on the node and of their containers (for a cluster-wide
  line, every pod's), from ``pods.json``; not shown without it;
- ``labels_missing``: the labels of every Node object; holds where one node lacks one of
  the labels, fails where every node carries them all; not shown without Node objects.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from analyzers.knowledge.known_issues import Context
from bundle import specs, versions

if TYPE_CHECKING:
    from analyzers.facts import Facts

_NUMBER = re.compile(r"(?<![0-9])v?(\d+(?:\.\d+)*)")
_CLAUSE = re.compile(r"(>=|<=|==|>|<)\s*v?(\d+(?:\.\d+)*)")
_DRIVER_LABEL = "nvidia.com/cuda.driver-version.full"
_DRIVER_PARTS = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor",
                 "nvidia.com/cuda.driver.rev")
_NFD_OS_ID = "feature.node.kubernetes.io/system-os_release.ID"
_FAMILY_LABEL = "nvidia.com/gpu.family"
_PRODUCT_LABEL = "nvidia.com/gpu.product"
# GPU architectures as GFD's nvidia.com/gpu.family label names them.
ARCHITECTURES = frozenset({"kepler", "maxwell", "pascal", "volta", "turing", "ampere",
                           "ada-lovelace", "hopper", "blackwell"})
# The managed services' own node labels.
_MANAGED = (("eks", "eks.amazonaws.com/"), ("gke", "cloud.google.com/gke-"),
            ("aks", "kubernetes.azure.com/"))
# The provider scheme each managed service runs on: a node of the provider without the
# service's labels may still be the service's (a self-managed EKS node), so unknown.
_SERVICE_OF = {"eks": "aws", "gke": "gce", "aks": "azure"}


class Verdict(StrEnum):
    HOLDS = "holds"
    FAILS = "fails"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Judged:
    """The context of one entry on one node: the verdict, and the conditions behind it
    in words (``checked``: each one that held with the value seen; ``unknown``: each one
    the bundle does not show; ``failed``: the first that failed)."""

    verdict: Verdict
    checked: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    failed: str | None = None


def numbers(text: str | None) -> tuple[int, ...] | None:
    """The first dotted number of a version text (``v1.17.4-ubuntu20.04`` → 1, 17, 4)."""
    if not text:
        return None
    found = _NUMBER.search(text)
    if found is None:
        return None
    try:
        return tuple(int(part) for part in found[1].split(".")[:4])
    except ValueError:  # pragma: no cover - the pattern only takes digits
        return None


def in_range(version: tuple[int, ...], spec: str) -> bool:
    """Whether ``version`` satisfies every clause of ``spec`` (``>=24.9.0,<25.3``); a
    version is compared on as many parts as the clause names (``<2.0`` against 2.0.5:
    2.0 is not below 2.0)."""
    for clause in spec.split(","):
        found = _CLAUSE.fullmatch(clause.strip())
        if found is None:
            return False
        op, bound = found[1], tuple(int(p) for p in found[2].split("."))
        mine = (version + (0,) * len(bound))[: len(bound)]
        if not {"<": mine < bound, "<=": mine <= bound, ">": mine > bound,
                ">=": mine >= bound, "==": mine == bound}[op]:
            return False
    return True


def _images_on(facts: Facts, node: str, part: str) -> Iterable[str]:
    for pod in facts.pods_by_node.get(node, ()):
        for container in (*pod.spec.init_containers, *pod.spec.containers):
            if part in container.image:
                yield container.image


def _image_version(facts: Facts, node: str, part: str) -> str | None:
    for image in _images_on(facts, node, part):
        tag = versions.image(image)[1]
        if tag and numbers(tag):
            return tag
    return None


def _driver(facts: Facts, node: str) -> str | None:
    smi = facts.node(node).nvidia_smi
    if smi is not None and smi.driver_version:
        return smi.driver_version
    labels = facts.nodes[node].labels if node in facts.nodes else {}
    if labels.get(_DRIVER_LABEL):
        return labels[_DRIVER_LABEL]
    parts = [labels.get(key) for key in _DRIVER_PARTS]
    if all(parts):
        return ".".join(p for p in parts if p)
    return _image_version(facts, node, "/driver:")


def _containerd(facts: Facts, node: str) -> str | None:
    text = versions.containerd_text(facts.node(node).containerd_version)
    if text:
        return text
    obj = facts.nodes.get(node)
    runtime = obj.status.node_info.container_runtime_version if obj is not None else ""
    return runtime.partition("://")[2] if runtime.startswith("containerd://") else None


def _kernel(facts: Facts, node: str) -> str | None:
    release = facts.node(node).kernel_release[0]
    if release:
        return release
    obj = facts.nodes.get(node)
    return (obj.status.node_info.kernel_version or None) if obj is not None else None


def _kubernetes(facts: Facts, node: str) -> str | None:
    obj = facts.nodes.get(node)
    kubelet = obj.status.node_info.kubelet_version if obj is not None else ""
    return kubelet or facts.kubernetes_version


def _operator(facts: Facts, node: str) -> str | None:
    return facts.operator_version.text


_VERSIONS = {
    "operator": _operator,
    "driver": _driver,
    "toolkit": lambda facts, node: _image_version(facts, node, "container-toolkit"),
    "device_plugin": lambda facts, node: _image_version(facts, node, "k8s-device-plugin"),
    "dcgm_exporter": lambda facts, node: _image_version(facts, node, "dcgm-exporter:"),
    "containerd": _containerd,
    "kernel": _kernel,
    "kubernetes": _kubernetes,
}


def _os_id(facts: Facts, node: str) -> str | None:
    text = facts.node(node).text(specs.OS_RELEASE)
    for line in (text or "").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "ID" and value.strip():
            return value.strip().strip("\"'").lower()
    labels = facts.nodes[node].labels if node in facts.nodes else {}
    return labels.get(_NFD_OS_ID, "").lower() or None


def _distributions(facts: Facts, node: str) -> set[str]:
    found = set()
    distribution = facts.node_runtime(node).distribution
    if distribution:
        found.add(distribution.lower())
    os_id = _os_id(facts, node)
    if os_id:
        found.add(os_id)
    return found


def _families(facts: Facts, node: str, wanted: tuple[str, ...]) -> set[str]:
    """The node's GPU architecture (GFD's family label) when the entry names
    architectures, else its product words (brand and product name, ``geforce``)."""
    labels = facts.nodes[node].labels if node in facts.nodes else {}
    if all(want.lower() in ARCHITECTURES for want in wanted):
        family = labels.get(_FAMILY_LABEL, "").lower()
        return {family} if family else set()
    found = set()
    if labels.get(_PRODUCT_LABEL):
        found.add(labels[_PRODUCT_LABEL].replace("-", " ").lower())
    smi = facts.node(node).nvidia_smi
    for gpu in smi.gpus if smi is not None else ():
        found.update(text.lower() for text in (gpu.product_brand, gpu.product_name) if text)
    return found


def _clouds(facts: Facts, node: str) -> set[str]:
    obj = facts.nodes.get(node)
    if obj is None:
        return set()
    found = set()
    scheme = obj.spec.provider_id.partition("://")[0]
    if scheme:
        found.add(scheme)
    for name, prefix in _MANAGED:
        if any(key.startswith(prefix) for key in obj.labels):
            found.update((name, _SERVICE_OF[name]))
    return found


def _named(values: set[str], wanted: tuple[str, ...]) -> bool:
    """Whether one of ``wanted`` names one of ``values`` (a family or brand may be a word
    of a product name: ``geforce`` of ``nvidia geforce rtx 4090``)."""
    return any(want.lower() == value or want.lower() in value.split()
               for want in wanted for value in values)


def _pods(facts: Facts, node: str | None, wanted: tuple[str, ...]) -> bool | None:
    """Whether a pod, or a container of one, named like one of ``wanted`` runs on ``node``
    (anywhere for None); None where the bundle has no pods."""
    if not facts.has(specs.PODS):
        return None
    pods = facts.pods_by_node.get(node, ()) if node else facts.pods
    return any(fnmatch.fnmatchcase(name, glob) for pod in pods
               for name in (pod.name, *(c.name for c in (*pod.spec.init_containers,
                                                        *pod.spec.containers)))
               for glob in wanted)


def _labels_missing(facts: Facts, wanted: tuple[str, ...]) -> bool | None:
    """Whether some node lacks one of the ``wanted`` labels; None without Node objects."""
    if not facts.nodes:
        return None
    return any(key not in obj.labels for obj in facts.nodes.values() for key in wanted)


def _presence(facts: Facts, node: str | None, context: Context) -> Judged:
    """The ``pods`` and ``labels_missing`` conditions alone."""
    checked: list[str] = []
    unknown: list[str] = []
    if context.pods:
        seen = _pods(facts, node, context.pods)
        wanted = "/".join(context.pods)
        if seen is None:
            unknown.append(f"pods {wanted}")
        elif not seen:
            where = f"on {node}" if node else "in the bundle"
            return Judged(Verdict.FAILS, failed=f"no pod named {wanted} runs {where}")
        else:
            checked.append(f"pod {wanted} runs {f'on {node}' if node else 'in the cluster'}")
    if context.labels_missing:
        lacking = _labels_missing(facts, context.labels_missing)
        wanted = "/".join(context.labels_missing)
        if lacking is None:
            unknown.append(f"nodes lacking {wanted}")
        elif not lacking:
            return Judged(Verdict.FAILS, failed=f"every node carries {wanted}")
        else:
            checked.append(f"a node lacks {wanted}")
    return Judged(Verdict.UNKNOWN if unknown else Verdict.HOLDS, tuple(checked), tuple(unknown))


def judge(facts: Facts, node: str | None, context: Context) -> Judged:
    """The entry's ``context`` on ``node`` (None: a cluster-wide place, where only the
    operator's and the API server's versions can be read)."""
    checked: list[str] = []
    unknown: list[str] = []
    for name, reader in _VERSIONS.items():
        spec = getattr(context, name)
        if spec is None:
            continue
        if node is None and name not in ("operator", "kubernetes"):
            seen = None
        elif node is None:
            seen = facts.operator_version.text if name == "operator" \
                else facts.kubernetes_version
        else:
            seen = reader(facts, node)
        version = numbers(seen)
        if version is None:
            unknown.append(f"{name} {spec}")
        elif in_range(version, spec):
            checked.append(f"{name} {seen} ({spec})")
        else:
            return Judged(Verdict.FAILS, failed=f"{name} is {seen}, not {spec}")
    sets = {
        "distribution": (lambda: _distributions(facts, node)) if node else None,
        "cri": (lambda: {facts.node_cri(node).cri or ""} - {""}) if node else None,
        "gpu_family": (lambda: _families(facts, node, context.gpu_family)) if node else None,
        "cloud": (lambda: _clouds(facts, node)) if node else None,
    }
    for name, read in sets.items():
        wanted: tuple[str, ...] = getattr(context, name)
        if not wanted:
            continue
        values = read() if read is not None else set()
        if name == "cloud" and not _named(values, wanted) and any(
                _SERVICE_OF.get(want) in values for want in wanted):
            values = set()  # the service's provider, without the service's labels
        if not values:
            unknown.append(f"{name} {'/'.join(wanted)}")
        elif _named(values, wanted):
            checked.append(f"{name} {'/'.join(sorted(values))}")
        else:
            return Judged(Verdict.FAILS,
                          failed=f"{name} is {'/'.join(sorted(values))}, not {'/'.join(wanted)}")
    presence = _presence(facts, node, context)
    if presence.verdict is Verdict.FAILS:
        return presence
    checked += presence.checked
    unknown += presence.unknown
    verdict = Verdict.UNKNOWN if unknown else Verdict.HOLDS
    return Judged(verdict, tuple(checked), tuple(unknown))


__all__ = ["Judged", "Verdict", "in_range", "judge", "numbers"]
