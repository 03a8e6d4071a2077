"""SC003: Containers reach GPUs without an nvidia.com limit, or fail for lack of one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from analyzers import commands as sh
from analyzers.facts.evidence import field as obj_field
from analyzers.facts.gpu import container_gpus
from analyzers.knowledge import signatures
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import LOGS, names
from analyzers.rules.sc._access import HIDDEN_VALUES, is_operand, is_privileged, nvidia_image
from analyzers.rules.sc._common import (
    EXAMPLE_CAP,
    WorkloadGroup,
    by_workload,
    containers_of,
    pod_key,
    pod_ref,
)
from bundle import specs
from bundle.evidence import clip
from bundle.kube import Pod


class GpuAccessOutsideScheduler(Rule):
    """Containers reach GPUs without an nvidia.com limit, or fail for lack of one.

    Flags containers that set ``NVIDIA_VISIBLE_DEVICES`` (to anything but ``void`` or
    ``none``) or run privileged from an NVIDIA image without any ``nvidia.com/*`` limit,
    and containers without a limit whose logs show ``nvidia-smi`` missing or unable to
    reach the driver. The GPU Operator's own operand pods are left out. Pods of one
    controller are reported together (subject ``namespace/<owner>``).

    Why it matters:
    A container that sees GPUs the scheduler did not give it bypasses accounting and
    isolation: it can use a GPU another pod was allocated, and node numbers no longer
    describe reality. The opposite case — a workload that needs a GPU but asks for
    none — just fails, because only allocated containers get the driver injected.

    Remediation:
    Give every container that uses a GPU a ``resources.limits`` entry for
    ``nvidia.com/gpu`` (or the MIG/shared resource) and remove ``NVIDIA_VISIBLE_DEVICES``
    and ``privileged`` from workloads; monitoring agents are the usual, deliberate exception.
    """

    id = "SC003"
    slug = "gpu-access-outside-scheduler"
    severity = Severity.MEDIUM
    confidence = Confidence.LIKELY
    inputs = (cluster(specs.PODS), LOGS)
    tags = ("scheduling", "isolation")

    def check(self, ctx: Context) -> Iterable[Finding]:
        found = ((pod, list(self._pod_reasons(ctx, pod))) for pod in ctx.facts.pods
                 if not pod.terminated and not is_operand(ctx.facts, pod))
        for subject, group in by_workload(found):
            yield self._finding(subject, group)

    def _pod_reasons(self, ctx: Context, pod: Pod) -> Iterator[tuple[str, Evidence]]:
        for section, index, container in containers_of(pod):
            if container_gpus(container):
                continue
            where = f"{pod_key(pod)} container {container.name}"
            for env_index, env in enumerate(container.env):
                if env.name != "NVIDIA_VISIBLE_DEVICES":
                    continue
                value = env.value
                from_ref = env.value_from
                if value is None and from_ref is None:
                    continue
                if value is not None and value.strip().lower() in HIDDEN_VALUES:
                    continue
                shown = value if value is not None else "(set from valueFrom)"
                yield ("sets NVIDIA_VISIBLE_DEVICES without a GPU limit",
                       obj_field(pod, f"{where}: NVIDIA_VISIBLE_DEVICES={shown}, no "
                                      "nvidia.com limit",
                                 "spec", section, index, "env", env_index))
            if is_privileged(container) and nvidia_image(container.image):
                yield ("runs privileged from an NVIDIA image without a GPU limit",
                       obj_field(pod, f"{where}: privileged, image {container.image}, no "
                                      "nvidia.com limit",
                                 "spec", section, index, "securityContext", "privileged"))
            log = ctx.facts.container_log(pod.namespace, pod.name, container.name)
            path, text = log if log is not None else ("", "")
            if path and text:
                hits = [m for m in signatures.match(text, "log", container=container.name)
                        if "SC003" in m.signature.rules]
                if hits:
                    yield ("needs a GPU (nvidia-smi fails in its log) but has no GPU limit",
                           Evidence(path=path, line=hits[0].line, excerpt=clip(hits[0].text)))

    def _finding(self, subject: str, group: WorkloadGroup[tuple[str, Evidence]]) -> Finding:
        pods = sorted(group.pods, key=pod_key)
        reasons = Counter(reason for reason, _ in group.found)
        what = "; ".join(f"{reason} ({count} container(s))"
                         for reason, count in sorted(reasons.items()))
        evidence: list[Evidence] = []
        for _, item in group.found:
            if len(evidence) < 4 and all(e.excerpt != item.excerpt for e in evidence):
                evidence.append(item)
        listed = names((pod_key(p) for p in pods), EXAMPLE_CAP)
        where = f" on {names(group.nodes, 4)}" if group.nodes else ""
        summary = (f"{len(pods)} pod(s) of {subject}{where} reach GPUs outside the scheduler's "
                   f"accounting or lack the limit that would give them one: {what}. "
                   f"Pods: {listed}.")
        first = pods[0]
        remediation = sh.lines(
            sh.cmd("kubectl", "get", "pod", sh.pod(first.name), "-n", sh.namespace(first.namespace),
                   "-o", sh.raw("jsonpath='{range .spec.containers[*]}{.name} {.resources.limits} "
                                "{.env}{\"\\n\"}{end}'")),
            "# give the container resources.limits: {nvidia.com/gpu: 1} and drop\n"
            "# NVIDIA_VISIBLE_DEVICES / privileged; the device plugin sets the variable for\n"
            "# the devices it allocates.")
        return self.finding(subject, summary, nodes=sorted(group.nodes),
                            objects=[pod_ref(p) for p in pods[:10]],
                            evidence=evidence, remediation=remediation)
