"""Small helpers shared by rule families (evidence from objects and files)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, LiteralString, NamedTuple

from analyzers import commands as sh
from analyzers.facts.evidence import field
from analyzers.facts.next_step import Ask as NextAsk
from analyzers.facts.next_step import NextStep
from analyzers.facts.operator_version import OperatorChart, OperatorImage
from analyzers.results.models import Evidence, ObjectRef
from analyzers.rule import Input, cluster, node
from bundle import specs
from bundle.evidence import at_pointer, clip
from bundle.kube import Deployment, Event, KubeObject, Node, Pod

if TYPE_CHECKING:
    from analyzers.rule import Context

EVENT_CAP = 3
# container logs (logs/<namespace>/<pod>/<container>.log) as a rule input; LOGS_REQUIRED for
# a rule that finds its cause only in them: without them it is skipped, not passed
LOGS = Input(specs.LOGS_ANY, optional=True)
LOGS_REQUIRED = Input(specs.LOGS_ANY)
# What the container-runtime facts read of a node (ctx.facts.runtime, .node_runtime,
# .runtime_gate): the runtime's copied config files, loaded config and version, runtime.json
RUNTIME_FILE = node(specs.RUNTIME_JSON, fallback="the runtime and distribution the Node "
                   "objects report (nodeInfo, labels)")
RUNTIME_FILES = (node(specs.CONTAINERD_ANY, optional=True), node(specs.CRIO_ANY, optional=True),
                 RUNTIME_FILE)
# A node's kernel lines as facts.kernel_events reads them: dmesg and the journals
KERNEL_LINES = (node(specs.DMESG, optional=True), node(specs.JOURNALS, optional=True))
# The operator's settings as facts.cluster_policy and facts.toolkit_enabled read them
OPERATOR_SETTINGS = (cluster(specs.CLUSTERPOLICIES, optional=True),
                     cluster(specs.HELM_RELEASES, optional=True))


def ref(obj: Node | Pod | KubeObject, kind: str) -> ObjectRef:
    meta = getattr(obj, "metadata", None)
    name = getattr(meta, "name", "") or ""
    namespace = getattr(meta, "namespace", None)
    return ObjectRef(kind=kind, namespace=namespace, name=name)


def node_ref(name: str) -> ObjectRef:
    return ObjectRef(kind="Node", name=name)


def events_matching(events: Iterable[Event], rule_id: str) -> Iterator[Event]:
    """Events whose message matches a known signature that feeds ``rule_id``."""
    from analyzers.knowledge import signatures

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


# -- the next step of an unexplained failure (facts.next_step), written out -------------

def ask_command(ask: NextAsk) -> str | None:
    """The read-only command ``ask`` stands for, each name quoted for the shell; None
    where a name of the bundle is not safe in a command line (nothing is offered)."""
    if ask.kind == "logs":
        previous = ("--previous",) if ask.previous else ()
        line = sh.cmd("kubectl", "-n", sh.namespace(ask.namespace), "logs", sh.pod(ask.pod),
                      "-c", sh.container(ask.container), *previous, "--tail=200")
    elif ask.kind == "describe":
        line = sh.cmd("kubectl", "-n", sh.namespace(ask.namespace), "describe", "pod",
                      sh.pod(ask.pod))
    elif ask.ssh:
        line = sh.cmd("ssh", sh.node(ask.node), sh.raw("--"), sh.raw(_quoted_look(ask.look)))
    else:
        line = sh.cmd("kubectl", "debug", sh.join("node/", sh.node(ask.node)), "-it",
                      "--image=ubuntu", "--", "chroot", "/host", "sh", "-c",
                      sh.raw(_quoted_look(ask.look)))
    return None if line.startswith(sh.REFUSED) else line


def _quoted_look(text: LiteralString) -> LiteralString:
    return "\"" + text + "\"" if "'" in text else "'" + text + "'"


def next_step_text(step: NextStep, what: str, logs: str = "its logs show") -> str:
    """One sentence for a finding's summary: why ``what`` ("the driver stage") fails, as
    the first error ``logs`` ("its logs show", "the node's kernel log shows"), or the
    command to ask for next and why."""
    lead = f" {step.lead}." if step.lead else ""
    if step.error is not None and step.lead:
        return f"{lead} The node's kernel log records the kill: {step.error.quote()}."
    if step.error is not None:
        said = step.error.step_said
        where = f", in the step '{clip(said, 120)}'" if said is not None else ""
        return (f"{lead} No known cause explains why {what} fails; the first error {logs} "
                f"is {step.error.quote()}{where}.")
    command = ask_command(step.ask) if step.ask is not None else None
    ask = f" Ask next for the output of: {command}" if command else ""
    if step.lead:
        return f"{lead} {step.why[:1].upper()}{step.why[1:]}.{ask}"
    return f" The bundle does not say why {what} fails: {step.why}.{ask}"
