"""Whether Secure Boot refuses (or will refuse) the unsigned NVIDIA kernel module on a
node: the Secure Boot line, the kernel's refusals, unsigned-module warnings, a module
absent while the driver container builds it on the node. Judged once per run
(:func:`refusal`, kept beside the run's facts): the rule that reports it and the rules
whose findings hang under it read the same answer."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from analyzers.facts.kernel_events import line_evidence
from analyzers.facts.logindex import node_logs
from analyzers.knowledge import signatures
from analyzers.results.models import Evidence
from bundle.evidence import clip

if TYPE_CHECKING:
    from analyzers.facts import Facts

_KEY_REFUSED = re.compile(r"not permitted|required key|key was rejected", re.IGNORECASE)


BLOCKED_SIGNATURE = "kernel-module-load-blocked"


def builds_module_on_node(facts: Facts, name: str) -> bool:
    """The driver container compiles an unsigned module on this node (DKMS-style):
    the operator runs the driver and precompiled modules are not used."""
    policy = facts.cluster_policy
    has_pod = "driver" in facts.operands.get(name, {})
    if policy is None:
        return has_pod
    if policy.component_enabled("driver") is False and not has_pod:
        return False
    return not facts.driver_precompiled


# (node, Secure Boot line, refusals, unsigned-module lines, module absent, built on node)
Refusal = tuple[str, Evidence, list[Evidence], list[Evidence], bool, bool]


def judge_refusal(facts: Facts, name: str) -> Refusal | None:
    """(node, Secure Boot line, refusals, unsigned-module lines, module absent, built on
    the node), or None when Secure Boot says nothing about the module on ``name``."""
    enabled, sb_line = facts.secure_boot(name)
    if not enabled or sb_line is None:
        return None
    kernels = facts.kernel_events
    signals = kernels[name].signals if name in kernels else ()
    modules = facts.modules(name)
    loaded = modules is not None and modules.loaded("nvidia")
    refused = [line_evidence(s.source) for s in signals
               if _refusal(s.kind, s.detail, s.source.message, loaded)]
    refused += _blocked_in_logs(facts, name)
    unsigned = [line_evidence(s.source) for s in signals
                if s.kind == "module_verification" and s.detail.startswith("nvidia")]
    if name not in facts.gpu_node_set and not unsigned:
        return None
    absent = modules is not None and not loaded
    dkms = absent and builds_module_on_node(facts, name)
    if not (refused or unsigned or dkms):
        return None
    return name, sb_line, refused, unsigned, absent, dkms


def _refusal(kind: str, detail: str, message: str, nvidia_loaded: bool) -> bool:
    """A lockdown or key refusal that can concern the nvidia module: any such line while
    nvidia is not loaded, only lines naming nvidia once it is."""
    if kind == "lockdown" or (kind == "module_load_failed" and _KEY_REFUSED.search(detail)):
        return not nvidia_loaded or "nvidia" in message.lower()
    return False


def _blocked_in_logs(facts: Facts, name: str) -> list[Evidence]:
    signature = (signatures.get(BLOCKED_SIGNATURE),)
    found: list[Evidence] = []
    for path, container, text in node_logs(facts, name, components=("driver",)):
        for hit in signatures.match(text, "log", container=container, signatures=signature):
            found.append(Evidence(path=path, line=hit.line, excerpt=clip(hit.text)))
            break
    return found


_JUDGED: WeakKeyDictionary[Facts, dict[str, Refusal | None]] = WeakKeyDictionary()


def refusal(facts: Facts, node: str) -> Refusal | None:
    """:func:`judge_refusal` on ``node``, judged once per run (the facts of the run)."""
    judged = _JUDGED.setdefault(facts, {})
    if node not in judged:
        judged[node] = judge_refusal(facts, node)
    return judged[node]
