"""RT009: A regenerated containerd configuration lost the nvidia runtime, or its template"""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.gate import TemplateLoss
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import (
    LOGS,
    OPERATOR_SETTINGS,
    RUNTIME_FILE,
    RUNTIME_FILES,
    node_ref,
)
from analyzers.rules.rt._distro import _distro_evidence, _log_evidence, _where
from bundle import specs
from bundle.evidence import first_line


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
    inputs = (node(specs.CONTAINERD_FILES), RUNTIME_FILE,
              cluster(specs.PODS, optional=True), *RUNTIME_FILES, *OPERATOR_SETTINGS, LOGS)
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
        artifacts = ctx.facts.node(node_name)
        files = artifacts.containerd_files
        parts: list[str] = []
        evidence: list[Evidence] = []
        severity = self.severity
        if loss.lost_on_restart and loss.template is not None:
            parts.append(f"{loss.main} defines the nvidia runtime but {loss.template}, which "
                         "it is rebuilt from at every start, does not: the runtime is lost "
                         "at the next restart")
            hit = first_line(artifacts.path(specs.containerd_file(loss.main)),
                             files.get(loss.main, ""), "nvidia")
            if hit is not None:
                evidence.append(Evidence(path=hit.path, line=hit.line, excerpt=hit.excerpt))
            evidence.append(Evidence(path=artifacts.path(specs.containerd_file(loss.template)),
                                     excerpt="(no nvidia runtime in the template)"))
        setting = ctx.facts.toolkit_settings
        if loss.toolkit_on_template and loss.template is not None:
            parts.append(f"the toolkit is told to edit {loss.template}, a Go template it "
                         "cannot parse as TOML")
            hit = first_line(artifacts.path(specs.containerd_file(loss.template)),
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
                evidence.append(Evidence(path=artifacts.path(specs.containerd_file(rebuilt)),
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
                            remediation=remediation, causes=[refs.link("RT001", node_name)])
