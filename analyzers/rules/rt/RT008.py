"""RT008: The Container Toolkit edits a containerd file or socket the node's runtime does not"""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.gate import Misdirection
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import (
    LOGS,
    RUNTIME_FILE,
    RUNTIME_FILES,
    node_ref,
)
from analyzers.rules.rt._distro import _distro_evidence, _env_fixes, _log_evidence, _where
from bundle import specs


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
    inputs = (cluster(specs.NODES), cluster(specs.CLUSTERPOLICIES, optional=True),
              cluster(specs.HELM_RELEASES, optional=True), RUNTIME_FILE,
              *RUNTIME_FILES, cluster(specs.PODS, optional=True), LOGS)
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
                            causes=[refs.link("RT001", node_name)])
