"""RT013: Containers ask for CDI devices that no spec on the node defines."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.cdi import requested
from analyzers.facts.evidence import event_evidence
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import CannotJudge, Context, Rule, cluster, node
from analyzers.rules.common import EVENT_CAP, names, node_ref
from analyzers.rules.rt._cdi import _EXPLAINED, _SIGNATURE, _why
from bundle import specs
from bundle.kube import Event, Pod


class CdiDeviceUnresolvable(Rule):
    """Containers ask for CDI devices that no spec on the node defines.

    The runtime refuses a container whose CDI device names (``nvidia.com/gpu=0``,
    ``management.nvidia.com/gpu=GPU-<uuid>``) are not in any spec under ``/etc/cdi`` or
    ``/var/run/cdi``: ``unresolvable CDI devices …``. The rule reads the requested names
    from the events, the specs from the node's ``cdi/`` files and the GPUs from its
    ``nvidia-smi.xml``, and says why each name fails: the wrong kind, a spec that lists
    only ``all``, a UUID that belongs to no GPU of the node (a GPU swap, a spec copied
    from another node), or a GPU newer than the spec.

    Why it matters:
    The pod is scheduled and its GPU allocated, but its container is never created; it
    retries forever while the GPU stays reserved.

    Remediation:
    List what the runtime can resolve on the node (``nvidia-ctk cdi list``) and compare
    with the requested names; regenerate the spec from the running driver (restart the
    toolkit pod on the node, or ``nvidia-ctk cdi generate``) and make the requesting
    side use the same kind.
    """

    id = "RT013"
    slug = "cdi-device-unresolvable"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.PODS), cluster(specs.EVENTS, optional=True),
              node(specs.CDI_ANY, optional=True),
              node(specs.NVIDIA_SMI, optional=True))
    tags = ("runtime", "cdi")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        if not ctx.facts.has(specs.EVENTS):
            raise CannotJudge("the events (cluster/events.json) were not collected")
        for node_name in sorted(facts.pods_by_node):
            failing: list[tuple[Pod, Event]] = []
            for pod in facts.pods_by_node[node_name]:
                if pod.terminated:
                    continue
                failing += [(pod, e) for e in facts.pod_events_with(pod, _SIGNATURE)]
            if failing:
                yield self._finding(ctx, node_name, failing)

    def _finding(self, ctx: Context, node_name: str,
                 failing: list[tuple[Pod, Event]]) -> Finding:
        collected = node_name in ctx.facts.node_dirs and bool(
            ctx.facts.node(node_name).cdi_files)
        artifacts = ctx.facts.node(node_name) if node_name in ctx.facts.node_dirs else None
        found_specs = artifacts.cdi_specs if artifacts is not None and collected else []
        smi = artifacts.nvidia_smi if artifacts is not None else None
        uuids = {g.uuid for g in smi.gpus if g.uuid} if smi is not None else set()
        wanted: dict[tuple[str, str], None] = {}  # the first _EXPLAINED names, in order
        for _, event in failing:
            wanted.update(dict.fromkeys(requested(event.message or "")))
            if len(wanted) >= _EXPLAINED:
                break
        reasons = []
        for kind, name in list(wanted)[:_EXPLAINED]:
            if not collected:
                why = "the node's CDI specs were not collected"
            elif not found_specs:
                why = "the node's CDI specs could not be read"
            else:
                why = _why(kind, name, found_specs, uuids)
            reasons.append(f"{kind}={name}: {why}")
        pods = list({(p.namespace, p.name): p for p, _ in failing}.values())
        evidence: list[Evidence] = [event_evidence(e) for _, e in failing[:EVENT_CAP]]
        if artifacts is not None:
            for spec in found_specs[:3]:
                shown = names(spec.devices, 4) or "no device"
                evidence.append(Evidence(path=artifacts.path(specs.CDI_DIR + spec.file),
                                         excerpt=f"kind: {spec.kind}; devices: {shown}"))
            if collected and not found_specs:
                evidence.append(Evidence(path=artifacts.path(specs.CDI_DIR),
                                         excerpt="(no readable CDI spec)"))
            if uuids:
                evidence.append(Evidence(path=artifacts.path(specs.NVIDIA_SMI),
                                         excerpt=f"GPU UUIDs: {names(uuids, 4)}"))
        said = "; ".join(reasons) or "names not read"
        summary = (f"On {node_name}, {len(pods)} pod(s) ({names(p.name for p in pods)}) ask "
                   f"for CDI devices that do not resolve: {said}.")
        remediation = sh.lines(
            sh.node_shell(sh.node(node_name), "busybox"),
            "nvidia-ctk cdi list                          # the names the runtime can resolve",
            "ls -l /etc/cdi /var/run/cdi; nvidia-smi -L   # specs, and the GPUs really there",
            "# regenerate the spec from the running driver (restart the toolkit pod on this "
            "node, or: nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml),",
            "# then recreate one failed pod",
        )
        objects = [node_ref(node_name)] + [
            ObjectRef(kind="Pod", namespace=p.namespace, name=p.name) for p in pods[:10]]
        caused_by = [refs.link("RT006", node_name)] if collected and not found_specs else []
        return self.finding(node_name, summary, nodes=[node_name], objects=objects,
                            evidence=evidence, remediation=remediation, caused_by=caused_by)
