"""RT: the runtime gate — the ``nvidia`` handler in containerd's loaded configuration."""

from __future__ import annotations

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts import Facts
from analyzers.facts.distro import NodeRuntime
from analyzers.facts.runtimes import NVIDIA_HANDLER, Cause
from analyzers.refs import Link
from bundle.kube import Pod

_CAUSE_TEXT = {
    Cause.TOOLKIT_DISABLED: "the ClusterPolicy disables the Container Toolkit, so nothing "
                            "registered the handler on this node (see CFG004)",
    Cause.DROPIN_NOT_IMPORTED: "the toolkit's drop-in exists but config.toml does not import "
                               "it (see RT003)",
    Cause.DROPIN_CLOBBERED: "a later drop-in replaced the whole CRI plugin table and dropped "
                            "the runtime (see RT002)",
    Cause.TOOLKIT_MISDIRECTED: "the Container Toolkit edits a file or socket this node's "
                                 "containerd does not use (see RT008)",
    Cause.TEMPLATE_BROKEN: "the distribution's template lost the runtime or broke the toolkit "
                           "(see RT009)",
    Cause.TOOLKIT_NOT_RUNNING: "the Container Toolkit pod is not running on this node, so "
                               "the drop-in was never written (or was removed when it exited)",
    Cause.UNKNOWN: "the copied containerd files do not explain it; compare them with the "
                   "loaded configuration",
}


def _uses_nvidia(pod: Pod, handlers: dict[str, str]) -> bool:
    name = pod.spec.runtime_class_name
    return name is not None and handlers.get(name, name) == NVIDIA_HANDLER


# The rule that reports each per-node cause on the node itself.
_CAUSE_RULE = {
    Cause.DROPIN_NOT_IMPORTED: "RT003",
    Cause.DROPIN_CLOBBERED: "RT002",
    Cause.TOOLKIT_MISDIRECTED: "RT008",
    Cause.TEMPLATE_BROKEN: "RT009",
}


def _cause_link(facts: Facts, node_name: str, cause: Cause) -> list[Link]:
    if cause is Cause.TOOLKIT_DISABLED and facts.cluster_policy is not None:
        return [refs.link("CFG004", facts.cluster_policy.metadata.name)]
    rule = _CAUSE_RULE.get(cause)
    return [refs.link(rule, node_name)] if rule is not None else []


def _look(node_name: str, where: NodeRuntime) -> list[str]:
    """Read-first commands that show the configuration this node's containerd runs with."""
    head = sh.node_shell(sh.node(node_name), "busybox")
    layout = where.layout
    if layout.stock:
        return [head, "containerd config dump | grep -c 'runtimes.nvidia'   # 0 confirms",
                "ls -l /etc/containerd/conf.d/"]
    config = sh.path(where.config)
    look = [head, sh.note("# {distribution} runs its own containerd with {config}",
                          distribution=sh.word(layout.distribution, "distribution"),
                          config=config),
            sh.cmd(sh.path(layout.binary), "--config", config, "config", "dump",
                   tail=" | grep -c 'runtimes.nvidia'   # 0 confirms")]
    if layout.templates:
        look.append(sh.cmd("ls", "-l", sh.path(layout.templates[0]), tail=" 2>/dev/null"))
    if layout.dropin_dir is not None:
        look.append(sh.cmd("ls", "-l", sh.path(layout.dropin_dir)))
    return look


def _remediation(node_name: str, cause: Cause, namespace: str, where: NodeRuntime) -> str:
    look = _look(node_name, where)
    if cause is Cause.TOOLKIT_DISABLED:
        return sh.lines(look, "# then follow CFG004: enable the toolkit with helm --reuse-values")
    if cause is Cause.TOOLKIT_NOT_RUNNING:
        ns = sh.namespace(namespace)
        return sh.lines(look, [
            sh.cmd("kubectl", "-n", ns, "get", "pods", "-o", "wide",
                   "-l", "app=nvidia-container-toolkit-daemonset",
                   "--field-selector", sh.join("spec.nodeName=", sh.node(node_name))),
            sh.cmd("kubectl", "-n", ns, "logs", "-l", "app=nvidia-container-toolkit-daemonset",
                   "-c", "nvidia-container-toolkit-ctr", "--tail=100")])
    if cause is Cause.UNKNOWN:
        if not where.layout.stock:
            return sh.lines(look, "# compare the copied files with the dump of that file")
        return sh.lines(look, "# compare /etc/containerd/config.toml and conf.d/* with the dump")
    return sh.lines(look, f"# then follow {_CAUSE_RULE[cause]} for the fix")
