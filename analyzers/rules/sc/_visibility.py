"""SC007: pods on a GPU node see GPUs they were not allocated."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from analyzers.facts.evidence import field as obj_field
from analyzers.facts.gpu import container_gpus
from analyzers.results.models import Evidence
from analyzers.rules.sc._access import HIDDEN_VALUES, is_privileged, nvidia_image
from analyzers.rules.sc._common import containers_of, pod_key
from bundle.kube import Container, Pod

VISIBLE = "NVIDIA_VISIBLE_DEVICES"


CAP = 5


@dataclass(frozen=True, slots=True)
class Overreach:
    """One container that sees more GPUs than it was allocated, and how."""

    pod: Pod
    container: str
    allocated: int
    how: str
    evidence: Evidence


def _visible_env(container: Container) -> tuple[int, str] | None:
    """(env index, value) of a ``NVIDIA_VISIBLE_DEVICES`` the pod sets itself."""
    for index, env in enumerate(container.env):
        if env.name != VISIBLE:
            continue
        if env.value is None:
            return (index, "(from valueFrom)") if env.value_from is not None else None
        if env.value.strip().lower() not in HIDDEN_VALUES:
            return index, env.value
    return None


def _overreach(pod: Pod) -> Iterator[Overreach]:
    for section, index, container in containers_of(pod):
        allocated = sum(container_gpus(container).values())
        where = f"{pod_key(pod)} container {container.name}"
        limit = f"a limit of {allocated}" if allocated else "no nvidia.com limit"
        env = _visible_env(container)
        if env is not None:
            env_index, value = env
            how = (f"sets {VISIBLE}={value} itself" + (" (every GPU)" if value == "all" else "")
                   + f" with {limit}")
            yield Overreach(pod, container.name, allocated, how, obj_field(
                pod, f"{where}: {VISIBLE}={value}, {limit}",
                "spec", section, index, "env", env_index))
        # A privileged container gets the device nodes; it can use them when it was given
        # the driver (a limit, the nvidia runtime) or brings it (an NVIDIA/CUDA image).
        # Privileged system daemons (kube-proxy, CNI) do neither.
        usable = allocated or pod.spec.runtime_class_name or nvidia_image(container.image)
        if is_privileged(container) and usable:
            how = f"runs privileged (every /dev/nvidia* device of the host) with {limit}"
            yield Overreach(pod, container.name, allocated, how, obj_field(
                pod, f"{where}: privileged, {limit}",
                "spec", section, index, "securityContext", "privileged"))
