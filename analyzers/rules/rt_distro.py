"""RT008–RT010: the runtime gate on k3s, RKE2, k0s, MicroK8s and CRI-O nodes."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.distro import NodeRuntime
from analyzers.facts.gate import CrioState, LogHit, Misdirection, TemplateLoss
from analyzers.facts.preconditions import Need
from analyzers.facts.runtimes import NVIDIA_HANDLER
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import (
    EVENT_CAP,
    LOGS,
    OPERATOR_SETTINGS,
    RUNTIME_FILE,
    RUNTIME_FILES,
    event_evidence,
    field,
    names,
    node_ref,
)
from bundle.evidence import first_line
from bundle.kube import Event, Pod


def _where(nr: NodeRuntime) -> str:
    return f"{nr.describe()} (from {nr.basis})"


def _distro_evidence(nr: NodeRuntime) -> list[Evidence]:
    return [nr.evidence] if nr.evidence is not None else []


def _log_evidence(hits: tuple[LogHit, ...]) -> list[Evidence]:
    found = []
    for log, hit in hits[:2]:
        where = log.locate(hit)
        found.append(Evidence(path=where.path, line=where.line, excerpt=where.excerpt))
    return found


def _env_fixes(config: str, socket: str, source: str | None) -> list[str]:
    """The toolkit.env values to set, as comments (a value may come from runtime.json)."""
    found = [sh.note("#   CONTAINERD_CONFIG={value}", value=sh.path(config)),
             sh.note("#   CONTAINERD_SOCKET={value}", value=sh.path(socket))]
    if source is not None:
        found.append(sh.note("#   RUNTIME_CONFIG_SOURCE=file={value}", value=sh.path(source)))
    return found


class ToolkitMisdirected(Rule):
    """The Container Toolkit edits a containerd file or socket the node's runtime does not
    use.

    The ClusterPolicy's ``spec.toolkit.env`` (or the Helm values ``toolkit.env``) tells
    the toolkit which host file to edit (``CONTAINERD_CONFIG`` / ``RUNTIME_CONFIG``) and
    which socket to signal (``CONTAINERD_SOCKET`` / ``RUNTIME_SOCKET``). On k3s, RKE2,
    k0s and MicroK8s containerd runs with its own file and socket, so the defaults (or
    values copied from another cluster) point at a file nobody reads. Also fires when
    the toolkit's log says it could not run ``containerd config dump`` on the host
    (``exit status 127``: the distribution's containerd is not on the host PATH).

    Why it matters:
    The toolkit reports success (or stops early), the node's containerd never gets the
    ``nvidia`` runtime, and every pod that needs it fails with ``no runtime for
    "nvidia" is configured`` — including the operator's own device plugin.

    Remediation:
    Look at the values first (``kubectl get clusterpolicy -o
    jsonpath='{.items[0].spec.toolkit.env}'``), then set the distribution's values with
    ``helm upgrade --reuse-values`` (the finding lists them), and confirm on one node
    that the file containerd runs with gains the ``nvidia`` runtime.
    """

    id = "RT008"
    slug = "toolkit-misdirected"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (cluster("nodes.json"), cluster("clusterpolicies.json", optional=True),
              cluster("helm/*.json", optional=True), RUNTIME_FILE,
              *RUNTIME_FILES, cluster("pods.json", optional=True), LOGS)
    needs = (Need.OPERATOR,)
    tags = ("runtime", "containerd", "distribution")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        for node_name in facts.gpu_nodes:
            found = facts.runtime_gate.get(node_name)
            if found is None or found.misdirection is None:
                continue
            yield self._finding(ctx, node_name, found.misdirection)

    def _finding(self, ctx: Context, node_name: str, wrong: Misdirection) -> Finding:
        nr = ctx.facts.node_runtime(node_name)
        target = wrong.target
        parts = []
        evidence: list[Evidence] = []
        for is_wrong, setting, value, default, actual in (
                (wrong.config_wrong, target.config_setting, target.config, "",
                 f"this node's containerd runs with {nr.config}"),
                (wrong.socket_wrong, target.socket_setting, target.socket, "socket ",
                 f"containerd listens on {wrong.expected_socket}")):
            if not is_wrong:
                continue
            origin = (f"{setting.origin} sets {setting.name}={value}" if setting is not None
                      else f"the toolkit's default {default}{value} is in effect")
            parts.append(f"{origin}, but {actual}")
            if setting is not None:
                evidence.append(setting.evidence)
        if wrong.dump_failures:
            parts.append("the toolkit could not run containerd on the host to dump its "
                         "configuration (exit status 127: no containerd on the host PATH)")
            evidence += _log_evidence(wrong.dump_failures)
        evidence += _distro_evidence(nr)
        summary = (f"On {node_name} ({_where(nr)}), the Container Toolkit is aimed at the "
                   f"wrong place: {'; '.join(parts)}. The nvidia runtime never reaches the "
                   "configuration containerd loads.")
        ns = sh.namespace(ctx.facts.operator_namespace or "gpu-operator")
        remediation = sh.lines(
            "# look first: the toolkit's values and its last lines",
            "kubectl get clusterpolicy -o jsonpath='{.items[0].spec.toolkit.env}{\"\\n\"}'",
            sh.cmd("kubectl", "-n", ns, "logs", "-l", "app=nvidia-container-toolkit-daemonset",
                   "-c", "nvidia-container-toolkit-ctr", "--tail=50"),
            sh.note("# on {node}: the file containerd runs with", node=sh.node(node_name)),
            sh.cmd("grep", "-n", "runtimes", sh.path(nr.config)),
            f"# values for {nr.layout.distribution} (set them in toolkit.env, then "
            "helm upgrade --reuse-values):",
            _env_fixes(wrong.expected_config, wrong.expected_socket,
                       nr.config if wrong.dump_failures else None),
        )
        return self.finding(node_name, summary, nodes=[node_name], objects=[node_ref(node_name)],
                            evidence=evidence, remediation=remediation,
                            causes=[refs.RT001(node_name)])


class TemplateLostRuntime(Rule):
    """A regenerated containerd configuration lost the nvidia runtime, or its template
    broke the toolkit.

    k3s and RKE2 rebuild ``config.toml`` from ``config.toml.tmpl`` (``config-v3.toml.tmpl``
    for containerd 2) at every start, MicroK8s from ``containerd-template.toml``. The
    rule fires when the generated file has the ``nvidia`` runtime but the template it is
    rebuilt from does not (the runtime is gone after the next restart), when the
    toolkit is told to edit the generated file itself and the loaded configuration has
    no ``nvidia`` runtime (the toolkit's own restart rebuilt the file without it), when
    the toolkit is told to edit a template holding Go directives, or when the toolkit's
    log shows it parsed such a template as TOML (``keys cannot contain { character``).

    Why it matters:
    The node works until the next restart of k3s/RKE2/MicroK8s (or a reboot), then
    every GPU pod fails at sandbox creation; or the toolkit stops at the template and
    never adds the runtime at all.

    Remediation:
    Compare the template with the generated file on the node; keep the ``nvidia``
    runtime in the template (or build on the distribution's own ``{{ template "base" . }}``,
    which carries the runtimes k3s/RKE2 detect), and never hand the toolkit a file
    with Go directives.
    """

    id = "RT009"
    slug = "template-lost-runtime"
    severity = Severity.HIGH
    confidence = Confidence.LIKELY
    inputs = (node("containerd/files/*"), RUNTIME_FILE,
              cluster("pods.json", optional=True), *RUNTIME_FILES, *OPERATOR_SETTINGS, LOGS)
    needs = (Need.OPERATOR, Need.CONTAINERD,)
    tags = ("runtime", "containerd", "distribution")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for node_name in ctx.facts.gpu_nodes:
            found = ctx.facts.runtime_gate.get(node_name)
            if found is None or found.template is None:
                continue
            yield self._finding(ctx, node_name, found.template)

    def _finding(self, ctx: Context, node_name: str, loss: TemplateLoss) -> Finding:
        nr = ctx.facts.node_runtime(node_name)
        artifacts = ctx.bundle.node(node_name)
        files = artifacts.containerd_files
        parts: list[str] = []
        evidence: list[Evidence] = []
        severity = self.severity
        if loss.lost_on_restart and loss.template is not None:
            parts.append(f"{loss.main} defines the nvidia runtime but {loss.template}, which "
                         "it is rebuilt from at every start, does not: the runtime is lost "
                         "at the next restart")
            hit = first_line(artifacts.path("containerd/files" + loss.main),
                             files.get(loss.main, ""), "nvidia")
            if hit is not None:
                evidence.append(Evidence(path=hit.path, line=hit.line, excerpt=hit.excerpt))
            evidence.append(Evidence(path=artifacts.path("containerd/files" + loss.template),
                                     excerpt="(no nvidia runtime in the template)"))
        setting = ctx.facts.toolkit_settings
        if loss.toolkit_on_template and loss.template is not None:
            parts.append(f"the toolkit is told to edit {loss.template}, a Go template it "
                         "cannot parse as TOML")
            hit = first_line(artifacts.path("containerd/files" + loss.template),
                             files.get(loss.template, ""), "{{")
            if hit is not None:
                evidence.append(Evidence(path=hit.path, line=hit.line, excerpt=hit.excerpt))
            for key in ("CONTAINERD_CONFIG", "RUNTIME_CONFIG"):
                if key in setting:
                    evidence.append(setting[key].evidence)
                    break
            severity = Severity.CRITICAL
        if loss.toolkit_on_generated:
            rebuilt = loss.template or (nr.toolkit_config if nr.layout.templates
                                        else "its template")
            told = next((setting[key] for key in ("CONTAINERD_CONFIG", "RUNTIME_CONFIG")
                         if key in setting), None)
            parts.append(f"the toolkit is told to edit {told.value if told else loss.main}, "
                         f"which {nr.layout.distribution} rebuilds from {rebuilt} at every "
                         "start of containerd: the runtime it added was gone after the "
                         "restart it triggered itself")
            if told is not None:
                evidence.append(told.evidence)
            if rebuilt in files:
                evidence.append(Evidence(path=artifacts.path("containerd/files" + rebuilt),
                                         excerpt="(no nvidia runtime in the template)"))
            severity = Severity.CRITICAL
        if loss.parse_failures:
            parts.append("the toolkit's log shows it failed to parse a Go template as TOML "
                         "(keys cannot contain { character) and added no runtime")
            evidence += _log_evidence(loss.parse_failures)
            severity = Severity.CRITICAL
        evidence += _distro_evidence(nr)
        summary = f"On {node_name} ({_where(nr)}), " + "; ".join(parts) + "."
        template = loss.template or (nr.toolkit_config if nr.layout.templates else None)
        remediation = sh.lines(
            sh.note("# on {node}: the generated file and its template", node=sh.node(node_name)),
            sh.cmd("grep", "-n", "nvidia", sh.path(loss.main)),
            sh.cmd("grep", "-n", "-e", "nvidia", "-e", "{{", sh.path(template))
            if template else [],
            "# keep the nvidia runtime in the template, or start it with "
            "{{ template \"base\" . }} so k3s/RKE2 add the runtimes they detect,",
            "# then restart the distribution's service on this node only and check again",
            ["# the toolkit must edit the template instead (toolkit.env, then helm upgrade "
             "--reuse-values):",
             sh.note("#   CONTAINERD_CONFIG={value}", value=sh.path(nr.toolkit_config))]
            if loss.toolkit_on_generated else [],
        )
        return self.finding(node_name, summary, severity=severity, nodes=[node_name],
                            objects=[node_ref(node_name)], evidence=evidence,
                            remediation=remediation, causes=[refs.RT001(node_name)])


def _needs_nvidia(pod: Pod, handlers: dict[str, str]) -> bool:
    name = pod.spec.runtime_class_name
    return name is not None and handlers.get(name, name) == NVIDIA_HANDLER and \
        not pod.terminated


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
    inputs = (cluster("nodes.json"), node("crio/*", optional=True),
              cluster("runtimeclasses.json", optional=True), cluster("pods.json", optional=True),
              cluster("events.json", optional=True), *RUNTIME_FILES, *OPERATOR_SETTINGS, LOGS)
    needs = (Need.CRIO,)
    tags = ("runtime", "cri-o", "distribution")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        handlers = {rc.metadata.name: rc.handler for rc in ctx.bundle.cluster.runtimeclasses}
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
            evidence.append(Evidence(path=ctx.bundle.node(node_name).path(
                "crio/files" + crio.nvidia_files[0]), excerpt="[crio.runtime.runtimes.nvidia]"))
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
                            causes=[refs.OP001(node_name), refs.OP008(node_name)])
