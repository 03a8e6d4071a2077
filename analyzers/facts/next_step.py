"""What to say when no rule names the cause of a failure: the first error, or what to ask for.

A failing stage of a node's GPU stack that no rule explains is never left at "unknown".
Either its logs say something went wrong — the first error line (``facts.first_error``)
of the containers the stage is stuck in, then of the logs that tell that stage's story,
quoted with file, line and the step it belongs to — or the bundle lacks what would say
it, and the answer is the one read-only command to ask the customer for next, with the
real namespace, pod and node names quoted for the shell, and why that one.

Why the bundle lacks it shapes the ask: a component the ClusterPolicy disables has no
pod whose log to read (the host's own setup is what to read); a container that never
started has no log (its events say why); a log the collector was refused (RBAC) or did
not take; node files a must-gather never has, or that were refused (no debug pod:
then the node command is to run over SSH, not through ``kubectl debug``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, LiteralString

from analyzers import commands as sh
from analyzers import gaps
from analyzers.facts.first_error import FirstError, first_error_in
from analyzers.facts.stages import STAGE_LOGS, Blocked, NodeStages, Stage
from bundle.kube import Pod
from bundle.layouts import V1

if TYPE_CHECKING:
    from analyzers.facts import Facts

_REFUSED_KINDS = frozenset({"forbidden", "unauthorized"})

# What each stage needs from the node itself when its pods' logs say nothing, and why.
_NODE_LOOK: dict[Stage, tuple[LiteralString, str]] = {
    Stage.SANDBOX: ("journalctl -u containerd -u kubelet --since -1h --no-pager | tail -100",
                    "the runtime and the kubelet say why a pod sandbox cannot be created"),
    Stage.DRIVER: ("dmesg | grep -iE 'NVRM|nvidia' | tail -50; lsmod | grep -E '^nvidia'",
                   "the kernel says whether and why the nvidia module did not load"),
    Stage.TOOLKIT: ("containerd config dump | grep -n -A4 nvidia",
                    "the runtime configuration containerd really loads shows whether the "
                    "nvidia runtime is in it"),
    Stage.CUDA: ("nvidia-smi; ls -l /dev/nvidia*",
                 "the host shows whether the GPUs answer and their device nodes exist"),
    Stage.PLUGIN: ("ls -l /var/lib/kubelet/device-plugins/",
                   "the kubelet's device plugin directory shows whether the plugin "
                   "registered its socket"),
    Stage.OPERANDS: ("nvidia-smi",
                     "the host shows whether the GPUs answer at all"),
}
# A stage whose component the ClusterPolicy can turn off: (component key, what runs instead).
_DISABLED: dict[Stage, tuple[str, str]] = {
    Stage.DRIVER: ("driver", "the host's own driver"),
    Stage.TOOLKIT: ("toolkit", "the host's own container runtime configuration"),
}


@dataclass(frozen=True, slots=True)
class NextStep:
    """The first error of a failing stage's logs, or what to ask for next and why."""

    error: FirstError | None = None
    command: str | None = None   # one read-only command line, quoted for the shell
    why: str = ""                # why this command; what the bundle could not have
    lead: str = ""               # what the pod's own record says first (an OOM kill)

    def sentence(self, what: str, logs: str = "its logs show") -> str:
        """One sentence for a finding's summary: why ``what`` ("the driver stage") fails,
        as the first error ``logs`` ("its logs show", "the node's kernel log shows"), or
        what to ask for."""
        lead = f" {self.lead}." if self.lead else ""
        if self.error is not None and self.lead:
            return f"{lead} The node's kernel log records the kill: {self.error.quote()}."
        if self.error is not None:
            step_said = self.error.step_said
            step = f", in the step '{_clipped(step_said)}'" if step_said is not None else ""
            return (f"{lead} No known cause explains why {what} fails; the first error "
                    f"{logs} is {self.error.quote()}{step}.")
        if self.lead:
            ask = f" Ask next for the output of: {self.command}" if self.command else ""
            return f"{lead} {_capital(self.why)}.{ask}"
        if self.command is None:
            return f" The bundle does not say why {what} fails: {self.why}."
        return (f" The bundle does not say why {what} fails: {self.why}. Ask next for the "
                f"output of: {self.command}")


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _clipped(text: str, limit: int = 120) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- what the collection could and could not have -------------------------------------

def node_files_gap(facts: Facts, node: str) -> tuple[str | None, bool]:
    """(why the bundle has no files of ``node``, whether debug pods were refused); (None,
    False) when it has them."""
    if node in facts.node_dirs:
        return None, False
    bundle = facts.bundle
    prefix = f"nodes/{node}/"
    failed = [item for item in bundle.manifest.failed_items
              if item.node == node or item.path.startswith(prefix)]
    if failed:
        kind = gaps.kind_of(failed[0])
        refused = kind in _REFUSED_KINDS
        return f"the collector could not read the node's files ({gaps.MEANINGS[kind]})", refused
    if bundle.layout != V1:
        return f"this {bundle.layout} bundle holds no files of the node itself", False
    return "the bundle holds no files of the node itself", False


def log_gap(facts: Facts, pod: Pod, container: str) -> str | None:
    """Why the bundle has no log of ``container`` in ``pod`` (None when it has one)."""
    if facts.pod_logs.container(pod, container):
        return None
    path = f"logs/{pod.namespace}/{pod.name}/{container}.log"
    item = facts.bundle.manifest.item(path)
    if item is not None and item.error:
        kind = gaps.kind_of(item)
        if kind == "not-started":
            return f"its container {container} never started, so it has no log"
        return f"its {container} log was not collected ({gaps.MEANINGS[kind]})"
    if _never_started(pod, container):
        return f"its container {container} never started, so it has no log"
    if facts.bundle.layout != V1:
        return f"the {facts.bundle.layout} bundle holds no log of its {container} container"
    return f"the bundle holds no log of its {container} container"


# Waiting reasons of a container that has run before (its previous log is the one to read).
_RAN = frozenset({"CrashLoopBackOff", "RunContainerError"})


def _never_started(pod: Pod, container: str) -> bool:
    for status in [*pod.status.init_container_statuses, *pod.status.container_statuses]:
        if status.name == container:
            return not _restarted(pod, container) and status.state.running is None \
                and status.state.terminated is None
    return True


def _restarted(pod: Pod, container: str) -> bool:
    """Whether ``container`` ran before its current instance (restarts, a last state, a
    crash loop)."""
    for status in [*pod.status.init_container_statuses, *pod.status.container_statuses]:
        if status.name == container:
            waiting = status.state.waiting
            return (status.restart_count > 0 or status.last_state.terminated is not None
                    or (waiting is not None and (waiting.reason or "") in _RAN))
    return False


# -- commands ---------------------------------------------------------------------------

def logs_command(pod: Pod, container: str) -> str:
    previous = ("--previous",) if _restarted(pod, container) else ()
    return sh.cmd("kubectl", "-n", sh.namespace(pod.namespace), "logs", sh.pod(pod.name),
                  "-c", sh.container(container), *previous, "--tail=200")


def describe_command(pod: Pod) -> str:
    return sh.cmd("kubectl", "-n", sh.namespace(pod.namespace), "describe", "pod",
                  sh.pod(pod.name))


def node_command(node: str, look: LiteralString, *, ssh: bool) -> str:
    """``look`` run on ``node``: through a debug pod, or over SSH where debug pods are
    refused."""
    if ssh:
        return sh.cmd("ssh", sh.node(node), sh.raw("--"), sh.raw(_single_quoted(look)))
    return sh.cmd("kubectl", "debug", sh.join("node/", sh.node(node)), "-it",
                  "--image=ubuntu", "--", "chroot", "/host", "sh", "-c",
                  sh.raw(_single_quoted(look)))


def _single_quoted(text: LiteralString) -> LiteralString:
    if "'" in text:
        return "\"" + text + "\""
    return "'" + text + "'"


def _usable(command: str) -> str | None:
    """The command, or None where a bundle value was refused (no command to offer)."""
    return None if command.startswith(sh.REFUSED) else command


# -- the answer ---------------------------------------------------------------------------

def _stage_logs(facts: Facts, stages: NodeStages) -> list[tuple[Pod, str]]:
    """(pod, container) whose logs tell the first failing stage's story: the containers
    its pods are stuck in, then the stage's usual logs on the node."""
    seen: list[tuple[Pod, str]] = []
    for blocked in stages.at_first:
        if blocked.container is not None:
            seen.append((blocked.pod, blocked.container))
    first = stages.first
    for component, container in STAGE_LOGS.get(first, ()) if first is not None else ():
        operand = stages.row.get(component)
        if operand is not None and (operand.pod, container) not in seen:
            seen.append((operand.pod, container))
    return seen


def for_stage(facts: Facts, stages: NodeStages) -> NextStep:
    """The first error of the node's first failing stage, else what to ask for next."""
    first = stages.first
    assert first is not None
    oom = _oom_killed(facts, stages)
    if oom is not None:
        return oom
    for pod, container in _stage_logs(facts, stages):
        found = facts.first_error(pod, container)
        if found is not None:
            return NextStep(error=found)
    return _ask(facts, stages, first)


def _ask(facts: Facts, stages: NodeStages, first: Stage) -> NextStep:
    node = stages.node
    missing, refused = node_files_gap(facts, node)
    look, look_why = _NODE_LOOK[first]
    on_node = _usable(node_command(node, look, ssh=refused))
    disabled = _DISABLED.get(first)
    policy = facts.cluster_policy
    if disabled is not None and policy is not None and \
            policy.component_enabled(disabled[0]) is False:
        why = (f"the ClusterPolicy disables the operator's {disabled[0]} "
               f"(spec.{disabled[0]}.enabled=false), so no pod of it exists whose log could "
               f"say; {disabled[1]} is what to read, and {look_why}")
        if missing is not None:
            why += f" ({missing})"
        return NextStep(command=on_node, why=why)
    lead: Blocked = stages.at_first[0]
    if lead.container is not None:
        gap = log_gap(facts, lead.pod, lead.container)
        if gap is not None and gap.endswith("never started, so it has no log"):
            events = facts.pod_events(lead.pod)
            if not events:
                return NextStep(command=_usable(describe_command(lead.pod)),
                                why=f"{lead.pod.name}: {gap}, and the bundle holds no event "
                                    "about the pod, where Kubernetes says why it is not "
                                    "created")
        elif gap is not None:
            return NextStep(command=_usable(logs_command(lead.pod, lead.container)),
                            why=f"{lead.pod.name}: {gap}; its log is where the "
                                f"{first.label} stage says what fails")
    if missing is not None:
        why = f"{missing}, and {look_why}"
        if refused:
            why += "; debug pods were refused, so run it over SSH"
        return NextStep(command=on_node, why=why)
    return NextStep(command=on_node,
                    why=f"the stage's logs in the bundle show no error line, and {look_why}")


# The kernel's record of a memory cgroup kill, and what to ask for where it is not in the bundle.
_KERNEL_OOM = re.compile(r"out of memory|oom-kill|Killed process", re.IGNORECASE)
_OOM_LOOK: LiteralString = ("journalctl -k --no-pager | grep -iE 'out of memory|oom-kill|"
                            "Killed process' | tail -20")


def _last_termination(pod: Pod, container: str) -> tuple[str, int | None] | None:
    """(reason, exit code) of ``container``'s last termination, from its status."""
    for status in [*pod.status.init_container_statuses, *pod.status.container_statuses]:
        if status.name != container:
            continue
        for ended in (status.last_state.terminated, status.state.terminated):
            if ended is not None and ended.reason:
                return ended.reason, ended.exit_code
    return None


def _memory_limit(pod: Pod, container: str) -> str | None:
    for spec in [*pod.spec.init_containers, *pod.spec.containers]:
        if spec.name == container:
            return spec.resources.limits.get("memory")
    return None


def _oom_killed(facts: Facts, stages: NodeStages) -> NextStep | None:
    """A container of the first failing stage killed for memory: its log stops without an
    error; the kernel's OOM line in the node's dmesg is the quote, else what to ask for."""
    for blocked in stages.at_first:
        container = blocked.container
        ended = _last_termination(blocked.pod, container) if container else None
        if container is None or ended is None or ended[0] != "OOMKilled":
            continue
        limit = _memory_limit(blocked.pod, container)
        code = f", exit code {ended[1]}" if ended[1] is not None else ""
        at = (f" at its memory limit {limit}" if limit
              else " (it sets no memory limit: the node ran out)")
        lead = (f"{blocked.pod.name}: its container {container} was killed for memory "
                f"(OOMKilled{code}){at}, so its log stops without an error")
        node = stages.node
        missing, refused = node_files_gap(facts, node)
        path = f"nodes/{node}/dmesg.txt"
        text = facts.bundle.read_text(path) if missing is None else None
        found = first_error_in(path, text, "dmesg", _KERNEL_OOM) if text else None
        if found is not None:
            return NextStep(error=found, lead=lead)
        if missing is not None:
            held = missing
        elif text:
            held = f"{path} does not hold it (the ring buffer keeps only the newest lines)"
        else:
            held = "the bundle holds no kernel log of the node"
        why = f"the kernel's OOM record says how much memory it held when killed; {held}"
        return NextStep(command=_usable(node_command(node, _OOM_LOOK, ssh=refused)),
                        why=why, lead=lead)
    return None


# The kernel's lines about the NVIDIA driver, its rival and the lockdown that refuses it.
_KERNEL_NVIDIA = re.compile(r"NVRM|nvidia|nouveau|Lockdown", re.IGNORECASE)
_KERNEL_LOOK: LiteralString = ("journalctl -k --no-pager | grep -iE 'NVRM|nvidia|nouveau|"
                               "Lockdown' | tail -50; lsmod | grep -E '^(nvidia|nouveau)'")


def for_smi(facts: Facts, node: str) -> NextStep:
    """Why nvidia-smi fails on ``node`` when no rule says: the first error among the
    kernel's NVIDIA lines of the node's ``dmesg.txt``, else what to ask for next."""
    missing, refused = node_files_gap(facts, node)
    path = f"nodes/{node}/dmesg.txt"
    text = facts.bundle.read_text(path) if missing is None else None
    if text:
        found = first_error_in(path, text, "dmesg", _KERNEL_NVIDIA)
        if found is not None:
            return NextStep(error=found)
    command = _usable(node_command(node, _KERNEL_LOOK, ssh=refused))
    if missing is not None:
        why = f"{missing}; the kernel's journal says whether the driver loaded and why not"
        if refused:
            why += " (debug pods were refused, so run it over SSH)"
    elif text:
        why = (f"{path} holds no NVIDIA kernel line that is an error (the ring buffer keeps "
               "only the newest lines); the kernel's journal keeps the older ones, where the "
               "driver says why it loaded without GPUs or did not load")
    elif text is not None and facts.bundle.has(path):
        why = (f"{path} is empty (the ring buffer was cleared or has wrapped); the kernel's "
               "journal keeps the older lines, where the driver says why it loaded without "
               "GPUs or did not load")
    else:
        why = ("the bundle holds no kernel log of the node; the kernel's journal says whether "
               "the driver loaded and why not")
    return NextStep(command=command, why=why)
