"""RT010: CRI-O has no usable nvidia runtime handler."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.distro import NodeRuntime
from analyzers.facts.evidence import event_evidence, field
from analyzers.facts.gate import CrioState
from analyzers.facts.preconditions import Need
from analyzers.facts.runtimes import NVIDIA_HANDLER
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import (
    EVENT_CAP,
    LOGS,
    OPERATOR_SETTINGS,
    RUNTIME_FILES,
    names,
    node_ref,
)
from analyzers.rules.rt._distro import _distro_evidence, _needs_nvidia, _where
from bundle import specs
from bundle.kube import Event, Pod


class CrioNoNvidiaHandler(Rule):
    """CRI-O has no usable nvidia runtime handler.

    On a CRI-O node (OpenShift, or CRI-O on any distribution) the handlers are the
    ``[crio.runtime.runtimes.<name>]`` tables of the loaded configuration (``crio status
    config``). Pods with ``runtimeClassName: nvidia`` (or a RuntimeClass with handler
    ``nvidia``) need one there; the toolkit adds it only in its config mode, and by
    default installs an OCI hook instead. CRI-O then refuses the sandbox with ``failed
    to find runtime handler nvidia from runtime list``. The CRI-O counterpart of RT001.

    Why it matters:
    Every pod that names the ``nvidia`` RuntimeClass fails before its first container
    starts on the node, while the GPU itself is fine.

    Remediation:
    On the node, ``crio status config | grep -A3 'crio.runtime.runtimes'`` and ``ls
    /etc/crio/crio.conf.d/``; either remove ``runtimeClassName: nvidia`` from pods where
    the OCI hook or CDI injects GPUs, or have the toolkit write a CRI-O handler, then
    restart CRI-O on one node at a time.
    """

    id = "RT010"
    slug = "crio-no-nvidia-handler"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.NODES), node(specs.CRIO_ANY, optional=True),
              cluster(specs.RUNTIMECLASSES, optional=True), cluster(specs.PODS, optional=True),
              cluster(specs.EVENTS, optional=True), *RUNTIME_FILES, *OPERATOR_SETTINGS, LOGS)
    needs = (Need.CRIO,)
    tags = ("runtime", "cri-o", "distribution")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        handlers = {rc.metadata.name: rc.handler for rc in ctx.facts.runtimeclasses}
        unread: list[str] = []
        for node_name in facts.gpu_nodes:
            nr = facts.node_runtime(node_name)
            if nr.runtime != "cri-o":
                continue
            found = facts.runtime_gate.get(node_name)
            crio = found.crio if found is not None else None
            users = [p for p in facts.pods_by_node.get(node_name, []) if _needs_nvidia(p, handlers)]
            refused: list[Event] = []
            for pod in users:
                refused += facts.pod_events_with(pod, "sandbox-no-runtime-crio")
            loaded = crio.handlers if crio is not None else None
            if loaded is not None and NVIDIA_HANDLER in loaded:
                continue
            if loaded is None and not refused:
                unread.append(node_name)
            if not refused and (loaded is None or not users):
                continue
            yield self._finding(ctx, node_name, nr, crio, users, refused)
        if unread:
            self.unjudged(f"CRI-O's loaded configuration (crio/) is not in the bundle for "
                          f"{names(unread)}")

    def _finding(self, ctx: Context, node_name: str, nr: NodeRuntime, crio: CrioState | None,
                 users: list[Pod], refused: list[Event]) -> Finding:
        loaded = crio.handlers if crio is not None else None
        evidence: list[Evidence] = []
        if loaded is not None and crio is not None:
            evidence.append(Evidence(path=crio.dump_path, excerpt=(
                f"(no crio.runtime.runtimes.{NVIDIA_HANDLER} table; handlers: "
                f"{', '.join(sorted(loaded)) or 'none'})")))
        evidence += [event_evidence(e) for e in refused[:EVENT_CAP]]
        evidence += [field(p, f"{p.namespace}/{p.name} runtimeClassName: "
                              f"{p.spec.runtime_class_name}", "spec", "runtimeClassName")
                     for p in users[:2]]
        evidence += _distro_evidence(nr)
        state = (f"CRI-O's loaded configuration has no '{NVIDIA_HANDLER}' handler (handlers: "
                 f"{', '.join(sorted(loaded)) or 'none'})" if loaded is not None else
                 "CRI-O refuses the nvidia handler (its loaded configuration was not collected)")
        hooks = ""
        if crio is not None and crio.nvidia_files and loaded is not None:
            hooks = (f"; {crio.nvidia_files[0]} defines the handler but the running CRI-O has "
                     "not loaded it (restarted since?)")
            evidence.append(Evidence(path=ctx.facts.node(node_name).path(
                specs.crio_file(crio.nvidia_files[0])), excerpt="[crio.runtime.runtimes.nvidia]"))
        elif crio is not None and crio.hooks:
            hooks = (f"; the NVIDIA OCI hook is installed ({crio.hooks[0]}), so GPUs are "
                     "injected without a handler and these pods should not name the nvidia "
                     "RuntimeClass")
        elif crio is not None and loaded is not None:
            hooks = "; no NVIDIA OCI hook is installed either"
        pods = f"{len(users)} pod(s) need it ({names(p.name for p in users)})" if users else \
            "pods there need it"
        confirm = f"; {len(refused)} sandbox failure event(s) confirm it" if refused else ""
        summary = f"On {node_name} ({_where(nr)}), {state}, yet {pods}{confirm}{hooks}."
        remediation = sh.lines(
            sh.node_shell(sh.node(node_name), "busybox"),
            "crio status config 2>/dev/null | grep -A3 'crio.runtime.runtimes' || "
            "crio config | grep -A3 'crio.runtime.runtimes'",
            "ls -l /etc/crio/crio.conf.d/ /usr/share/containers/oci/hooks.d/ "
            "/etc/containers/oci/hooks.d/",
            "# hook or CDI mode: drop runtimeClassName nvidia from these pods;",
            "# handler mode: set CRIO_CONFIG_MODE=config in the ClusterPolicy's toolkit.env "
            "(helm upgrade --reuse-values), then restart CRI-O on one node at a time",
        )
        objects = [node_ref(node_name)] + [
            ObjectRef(kind="Pod", namespace=p.namespace, name=p.name) for p in users[:10]]
        # RT001's place in the chain on a CRI-O node: operands stuck at the sandbox, the
        # device plugin not registered (links to absent findings are dropped)
        return self.finding(node_name, summary, nodes=[node_name], objects=objects,
                            evidence=evidence, remediation=remediation,
                            causes=[refs.link("OP001", node_name), refs.link("OP008", node_name)])
