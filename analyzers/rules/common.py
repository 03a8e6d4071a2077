"""Small helpers shared by rule families (evidence from objects and files)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from analyzers.facts.driverstep import DriverStep, named
from analyzers.facts.operator_version import OperatorChart, OperatorImage
from analyzers.facts.secureboot import refusal as secure_boot_refusal
from analyzers.models import Evidence, ObjectRef
from analyzers.rule import Input, cluster, node
from bundle.evidence import at_pointer, clip, join_pointer
from bundle.kube import Deployment, Event, KubeObject, Node, Pod

if TYPE_CHECKING:
    from analyzers.rule import Context

EVENT_CAP = 3
# container logs (logs/<namespace>/<pod>/<container>.log) as a rule input; LOGS_REQUIRED for
# a rule that finds its cause only in them: without them it is skipped, not passed
LOGS = Input("logs/*", optional=True)
LOGS_REQUIRED = Input("logs/*")
# What the container-runtime facts read of a node (ctx.facts.runtime, .node_runtime,
# .runtime_gate): the runtime's copied config files, loaded config and version, runtime.json
RUNTIME_FILE = node("runtime.json", fallback="the runtime and distribution the Node "
                   "objects report (nodeInfo, labels)")
RUNTIME_FILES = (node("containerd/*", optional=True), node("crio/*", optional=True),
                 RUNTIME_FILE)
# A node's kernel lines as facts.kernel_events reads them: dmesg and the journals
KERNEL_LINES = (node("dmesg.txt", optional=True), node("journal/*.jsonl", optional=True))
# The operator's settings as facts.cluster_policy and facts.toolkit_enabled read them
OPERATOR_SETTINGS = (cluster("clusterpolicies.json", optional=True),
                     cluster("helm/*.json", optional=True))


def ref(obj: Node | Pod | KubeObject, kind: str) -> ObjectRef:
    meta = getattr(obj, "metadata", None)
    name = getattr(meta, "name", "") or ""
    namespace = getattr(meta, "namespace", None)
    return ObjectRef(kind=kind, namespace=namespace, name=name)


def node_ref(name: str) -> ObjectRef:
    return ObjectRef(kind="Node", name=name)


def field(obj: KubeObject, excerpt: str, *parts: str | int) -> Evidence:
    """Evidence pointing at a field of an object inside its cluster/*.json list."""
    return Evidence(path=obj.source_path, pointer=join_pointer(obj.source_pointer, *parts),
                    excerpt=clip(excerpt))


def event_evidence(event: Event) -> Evidence:
    count = f" (x{event.count})" if event.count and event.count > 1 else ""
    when = f"{event.time} " if event.time else ""
    return field(event, f"{when}{event.reason}: {event.message or ''}{count}", "message")


def events_matching(events: Iterable[Event], rule_id: str) -> Iterator[Event]:
    """Events whose message matches a known signature that feeds ``rule_id``."""
    from analyzers import signatures

    for event in events:
        if event.message and any(rule_id in m.signature.rules
                                 for m in signatures.match(event.message, "event")):
            yield event


def names(items: Iterable[str], cap: int = 4) -> str:
    listed = sorted(items)
    shown = ", ".join(listed[:cap])
    return shown + (f" and {len(listed) - cap} more" if len(listed) > cap else "")


class RunningOperator(NamedTuple):
    """Which GPU Operator runs, as a rule quotes it (from ``ctx.facts.operator_version``)."""

    text: str            # the version text (image, app version or chart)
    evidence: Evidence   # where it was read
    subject: str         # "<namespace>/<name>" of the Deployment, pod or Helm release
    where: str           # "operator Deployment image", "Helm release <name>", ...


def running_operator(ctx: Context) -> RunningOperator | None:
    """The running operator's version text with its evidence, or None when unknown."""
    source = ctx.facts.operator_version.source
    if isinstance(source, OperatorImage):
        owner, image, index = source.owner, source.image, source.index
        if isinstance(owner, Deployment):
            ns = owner.metadata.namespace or "default"
            return RunningOperator(
                image,
                field(owner, f"Deployment {ns}/{owner.metadata.name} image {image}",
                      "spec", "template", "spec", "containers", index, "image"),
                f"{ns}/{owner.metadata.name}", "operator Deployment image")
        return RunningOperator(
            image,
            field(owner, f"{owner.namespace}/{owner.name} image {image}",
                  "spec", "containers", index, "image"),
            f"{owner.namespace}/gpu-operator", "operator pod image")
    if isinstance(source, OperatorChart):
        name, latest, key = source.release, source.revision, source.key
        found = at_pointer(latest.source_path, latest.source_pointer,
                           f"Helm release {name} revision {latest.revision} {key}: "
                           f"{source.text}", key)
        namespace = ctx.facts.operator_namespace
        return RunningOperator(
            source.text,
            Evidence(path=found.path, pointer=found.pointer, excerpt=found.excerpt),
            f"{namespace or 'gpu-operator'}/{name}", f"Helm release {name}")
    return None


def flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested Helm values as dotted keys; lists stay whole values."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


# The label the operator keys its operands on (set by NFD rules or by hand).
PRESENT = "nvidia.com/gpu.present"



def unnamed_driver_step(ctx: Context, name: str) -> DriverStep | None:
    """The first failing step of ``name``'s driver container when no specific rule names
    the failure: no known error signature in its logs (OP010, OP012, OP015, DRV004 …), no
    image pull failure, no Secure Boot refusal; that rule is the root, never two for one
    failure. None otherwise (or when the container shows no error)."""
    step = ctx.facts.driver_steps.get(name)
    if step is None or named(ctx.facts.pod_logs, step.operand.pod):
        return None
    driver = ctx.facts.driver_kernel.get(name)
    if driver is not None and driver.broken:
        return None
    return step if secure_boot_refusal(ctx.facts, name) is None else None
