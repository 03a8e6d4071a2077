"""SC003: GPU access that bypasses the scheduler's accounting."""

from __future__ import annotations

from analyzers.facts import Facts
from analyzers.facts.operands import component_of
from analyzers.facts.preconditions import stack_component
from bundle.kube import Container, Pod

HIDDEN_VALUES = frozenset({"void", "none", ""})


_IMAGE_HINTS = ("nvidia", "nvcr.io", "cuda")


def nvidia_image(image: str) -> bool:
    lowered = image.lower()
    return any(hint in lowered for hint in _IMAGE_HINTS)


def is_privileged(container: Container) -> bool:
    context = container.security_context
    return isinstance(context, dict) and context.get("privileged") is True


def is_operand(facts: Facts, pod: Pod) -> bool:
    """The operator's own pods in its namespace, or a GPU-stack DaemonSet's pods outside
    it (a standalone device plugin, dcgm-exporter, GFD, a managed driver installer): they
    see GPUs on purpose."""
    owners = {o.kind for o in pod.metadata.owner_references}
    if pod.namespace != (facts.operator_namespace or "gpu-operator"):
        return "DaemonSet" in owners and stack_component(pod) is not None
    labels = pod.metadata.labels
    return (component_of(pod) is not None or "DaemonSet" in owners
            or labels.get("app") == "gpu-operator"
            or "node-feature-discovery" in labels.get("app.kubernetes.io/name", "")
            or labels.get("app.kubernetes.io/managed-by") == "gpu-operator")
