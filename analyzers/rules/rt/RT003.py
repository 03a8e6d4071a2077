"""RT003: The nvidia drop-in exists but containerd does not import it."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.containerd_merge import relative_imports
from analyzers.facts.preconditions import Need
from analyzers.facts.runtimes import NVIDIA_HANDLER
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, OPERATOR_SETTINGS, RUNTIME_FILES, node_ref
from analyzers.rules.rt._dropin import _file_evidence, _restart_line
from bundle import specs
from bundle.evidence import first_line


class DropInNotImported(Rule):
    """The nvidia drop-in exists but containerd does not import it.

    ``/etc/containerd/conf.d/99-nvidia.toml`` defines the runtime, but
    ``config.toml`` has no ``imports`` covering it, so the loaded configuration
    (whose ``imports`` list names every file it read) never includes it. Not judged
    on a node whose containerd runs with another file than the one the toolkit was
    told to edit (k3s, k0s: the toolkit's drop-in under ``/etc/containerd`` is then
    RT008's evidence, not a missing import).

    Why it matters:
    The toolkit wrote its configuration and reported success, yet containerd runs
    without the ``nvidia`` handler; operand pods fail with ``no runtime for "nvidia"``.

    Remediation:
    Add the drop-in directory to the top of ``/etc/containerd/config.toml``
    (``imports = ["/etc/containerd/conf.d/*.toml"]``, keeping any existing entries),
    restart containerd on one node and check ``containerd config dump``.
    """

    id = "RT003"
    slug = "dropin-not-imported"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (node(specs.CONTAINERD_FILES), node(specs.CONTAINERD_DUMP), *RUNTIME_FILES,
              *OPERATOR_SETTINGS, cluster(specs.PODS, optional=True), LOGS)
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for node_name in ctx.facts.gpu_nodes:
            if not ctx.facts.node_runtime(node_name).containerd:
                continue  # Docker's or CRI-O's node: containerd is not its CRI
            state = ctx.facts.runtime(node_name)
            if state.has_nvidia is not False or not state.unimported_dropins:
                continue
            gate = ctx.facts.runtime_gate.get(node_name)
            if gate is not None and gate.misdirection is not None:
                continue  # the toolkit's own drop-in, written where this runtime never looks: RT008
            dropin = state.unimported_dropins[0]
            imports = ", ".join(state.imports) or "none"
            dump_text = ctx.facts.node(node_name).config_dump_text or ""
            dump_line = first_line(state.dump_path, dump_text, "imports")
            evidence = [_file_evidence(ctx, node_name, dropin, f"runtimes.{NVIDIA_HANDLER}"),
                        Evidence(path=state.dump_path, line=dump_line.line if dump_line else None,
                                 excerpt=dump_line.excerpt if dump_line else "(no imports)")]
            main = state.main
            if main in ctx.facts.node(node_name).containerd_files:
                evidence.append(_file_evidence(ctx, node_name, main, "version"))
            summary = (f"On {node_name}, {dropin} defines the nvidia runtime but containerd "
                       f"never read it: the loaded configuration imports {imports}.")
            relative = relative_imports(ctx.facts.node(node_name).containerd_files.get(main))
            if relative:
                summary += (f" config.toml imports {', '.join(relative)} by a relative path; "
                            "containerd before 1.6.29 / 1.7.16 resolves that against its working "
                            "directory (/ under systemd), not /etc/containerd — use an absolute "
                            "path.")
            glob = posixpath.dirname(dropin) + "/*.toml"
            where = ctx.facts.node_runtime(node_name)
            # k3s, RKE2 and MicroK8s rebuild the file from a template at every start
            edit = where.layout.templates[0] if where.layout.regenerated else main
            if not where.layout.stock and where.layout.dropin_dir is not None:
                # k0s generates its file and imports its own drop-in directory
                directory = where.layout.dropin_dir
                yield self.finding(
                    node_name, summary, nodes=[node_name], objects=[node_ref(node_name)],
                    evidence=evidence, causes=[refs.link("RT001", node_name)], remediation=sh.lines(
                        sh.note("# on {node}: {main} is generated and imports {dir}/*.toml",
                                node=sh.node(node_name), main=sh.path(main),
                                dir=sh.path(directory)),
                        sh.cmd("ls", "-l", sh.path(directory)),
                        sh.cmd("cp", sh.path(dropin), sh.path(directory + "/")),
                        _restart_line(where)))
                continue
            remediation = sh.lines(
                sh.note("# on {node}", node=sh.node(node_name)),
                sh.cmd("grep", "-n", "^imports", sh.path(main), tail=" || echo 'no imports line'"),
                sh.note("# add (or extend) at the top of {file}:", file=sh.path(edit)),
                sh.note("# ({main} is rebuilt from it at every start)", main=sh.path(main))
                if edit != main else [],
                sh.commented(f'imports = ["{glob}"]') if sh.path(glob).ok
                else sh.path(glob).refusal(),
                _restart_line(where),
            )
            yield self.finding(node_name, summary, nodes=[node_name],
                               objects=[node_ref(node_name)], evidence=evidence,
                               remediation=remediation, causes=[refs.link("RT001", node_name)])
