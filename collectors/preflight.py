"""The pre-flight check: before anything is collected, ask the API server (read-only,
`kubectl auth can-i`, one SelfSubjectAccessReview each) for every permission the run needs,
and say what will be collected, what will not, what that costs the analysis, and the RBAC
that would fix it.

    python3 gpu-triage-collect.pyz --preflight     (checks and stops; runs at the start anyway)
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
from collections.abc import Callable
from typing import Any, NamedTuple

# (group, resource[/subresource]); group "" is the core API.
CLUSTER = ""  # a cluster-scoped resource: no namespace flag


class Check(NamedTuple):
    verb: str
    group: str
    resource: str  # may be "pods/log"
    namespace: str | None  # None: cluster-scoped or all namespaces; CLUSTER never used here
    gathers: str  # what it collects, in the admin's words
    cost: str  # what the analysis loses without it
    nodes: bool = False  # needed to collect node files (debug-pod mode)
    optional: bool = False


class Answer(NamedTuple):
    check: Check
    allowed: bool | None  # None: kubectl could not say (the error is in `error`)
    error: str | None


NAMESPACED = frozenset(("pods", "events", "daemonsets", "deployments", "resourcequotas",
                        "configmaps", "secrets", "pods/log", "pods/attach"))


def checks(opts: argparse.Namespace) -> list[Check]:
    """Every permission a run with these options uses, in the order it uses them."""
    ns = opts.namespace  # the operator namespace when given; else every namespace is asked
    found: list[Check] = [
        Check("list", "", "nodes", None, "cluster/nodes.json (node state, GPU capacity, labels)",
              "node readiness and GPU capacity cannot be judged, and the GPU nodes cannot be "
              "chosen (name them with --nodes)"),
        Check("list", "", "pods", None, "cluster/pods.json (every pod's state)",
              "pod states are missing, and only the operator namespace's logs can be read "
              "(with -n)"),
        Check("list", "", "events", None, "cluster/events.json",
              "recent warnings (failed mounts, image pulls, GPU errors) are missing"),
        Check("list", "apps", "daemonsets", None, "cluster/daemonsets.json",
              "the rollout state of the operator's components cannot be judged"),
        Check("list", "apps", "deployments", None, "cluster/deployments.json",
              "the operator deployment's state cannot be judged"),
        Check("list", "", "namespaces", None, "cluster/namespaces.json",
              "namespace labels (Pod Security levels) cannot be read"),
        Check("list", "node.k8s.io", "runtimeclasses", None, "cluster/runtimeclasses.json",
              "the nvidia RuntimeClass cannot be checked"),
        Check("list", "", "resourcequotas", None, "cluster/resourcequotas.json",
              "quotas on GPUs cannot be checked"),
        Check("list", "nvidia.com", "clusterpolicies", None, "cluster/clusterpolicies.json",
              "the operator's ClusterPolicy (driver, toolkit, device plugin settings) cannot "
              "be read"),
        Check("list", "nvidia.com", "nvidiadrivers", None, "cluster/nvidiadrivers.json",
              "NVIDIADriver resources cannot be read"),
        Check("get", "apiextensions.k8s.io", "customresourcedefinitions", None,
              "cluster/crds.json", "CRD version skew after an upgrade cannot be judged"),
        Check("list", "", "configmaps", ns, "cluster/configmaps.json",
              "the operator's and device plugin's configuration (time-slicing, MIG) cannot "
              "be read"),
        Check("get", "", "pods/log", ns, "logs/ (container logs)",
              "no container log: the errors of the operator, driver, toolkit and device "
              "plugin are missing"),
        Check("list", "", "secrets", ns, "cluster/helm/ (Helm release history, values "
              "redacted; only secrets labelled owner=helm)",
              "no Helm history: what changed between chart revisions cannot be seen",
              optional=True),
    ]
    if opts.node_mode == "debug-pod":
        dns = opts.debug_namespace
        cost = ("no node files: the runtime gate (containerd/CRI-O config, driver, toolkit, "
                "dmesg, nvidia-smi) cannot be judged")
        found += [
            Check("create", "", "pods", dns, f"nodes/ (a debug pod per GPU node in {dns})", cost,
                  nodes=True),
            Check("create", "", "pods/attach", dns, "nodes/ (node.sh's output from the pod)",
                  cost, nodes=True),
            Check("delete", "", "pods", dns, f"removing this run's debug pods from {dns}",
                  f"the run cannot remove its debug pods: they stay in {dns}, finished, "
                  "until someone deletes them", optional=True),
        ]
    return found


def can_i_argv(argv: Callable[..., list[str]], check: Check) -> list[str]:
    resource, _, sub = check.resource.partition("/")
    name = f"{resource}.{check.group}" if check.group else resource
    scope: list[str] = []
    if check.resource in NAMESPACED:
        scope = ["-n", check.namespace] if check.namespace else ["--all-namespaces"]
    return argv("auth", "can-i", check.verb, name, *scope,
                *([f"--subresource={sub}"] if sub else []))


def ask(run: Callable[[list[str]], Any], argv: Callable[..., list[str]],
        found: list[Check], parallel: int) -> list[Answer]:
    """Ask every check (in parallel); `run(argv)` returns a collect.Result."""

    def one(check: Check) -> Answer:
        result = run(can_i_argv(argv, check))
        said = result.stdout.decode("utf-8", "replace").strip().splitlines()
        word = said[0].strip() if said else ""
        if word == "yes":
            return Answer(check, True, None)
        if word == "no":
            return Answer(check, False, None)
        return Answer(check, None, result.error or "kubectl auth can-i gave no answer")

    with futures.ThreadPoolExecutor(max_workers=max(1, min(parallel, 8))) as pool:
        return list(pool.map(one, found))


def scope_words(check: Check) -> str:
    if check.resource not in NAMESPACED:
        return ""
    return f" in namespace {check.namespace}" if check.namespace else " in all namespaces"


def describe(check: Check) -> str:
    group = f".{check.group}" if check.group else ""
    return f"{check.verb} {check.resource}{group}{scope_words(check)}"


def table(answers: list[Answer]) -> list[str]:
    """One line per permission: yes / NO / ?, what it gathers, and without it what is lost."""
    width = max(len(describe(a.check)) for a in answers)
    lines = []
    for answer in answers:
        check = answer.check
        if answer.allowed:
            lines.append(f"  yes  {describe(check):<{width}}  -> {check.gathers}")
        elif answer.allowed is False:
            tag = "no " if check.optional else "NO "
            lines.append(f"  {tag}  {describe(check):<{width}}  -> not collected: {check.cost}")
        else:
            lines.append(f"  ?    {describe(check):<{width}}  -> could not check "
                         f"({answer.error}); the run will try")
    return lines


def missing(answers: list[Answer]) -> list[Answer]:
    return [a for a in answers if a.allowed is False]


def nodes_refused(answers: list[Answer]) -> list[Check]:
    """The node-mode permissions refused outright: no debug pod will be started."""
    return [a.check for a in answers if a.check.nodes and a.allowed is False]


def rbac_yaml(answers: list[Answer], name: str = "gpu-triage-collect") -> str:
    """A ClusterRole (cluster-wide reads) and Roles (one namespace) granting what is missing."""
    cluster: dict[str, dict[str, set[str]]] = {}
    scoped: dict[str, dict[str, dict[str, set[str]]]] = {}
    for answer in missing(answers):
        check = answer.check
        where = cluster if check.namespace is None else scoped.setdefault(check.namespace, {})
        verbs = where.setdefault(check.group, {}).setdefault(check.resource, set())
        verbs.add(check.verb)
        if check.verb == "list":
            verbs.add("get")

    def rules(groups: dict[str, dict[str, set[str]]]) -> list[str]:
        out = ["rules:"]
        for group in sorted(groups):
            by_verbs: dict[tuple[str, ...], list[str]] = {}
            for resource, granted in sorted(groups[group].items()):
                by_verbs.setdefault(tuple(sorted(granted)), []).append(resource)
            for wanted, resources in sorted(by_verbs.items()):
                out += [f"- apiGroups: {json.dumps([group])}",
                        f"  resources: {json.dumps(resources)}",
                        f"  verbs: {json.dumps(list(wanted))}"]
        return out

    docs = []
    if cluster:
        docs.append("\n".join(["apiVersion: rbac.authorization.k8s.io/v1", "kind: ClusterRole",
                               "metadata:", f"  name: {name}", *rules(cluster)]))
    for namespace, groups in sorted(scoped.items()):
        docs.append("\n".join(["apiVersion: rbac.authorization.k8s.io/v1", "kind: Role",
                               "metadata:", f"  name: {name}", f"  namespace: {namespace}",
                               *rules(groups)]))
    return "\n---\n".join(docs) + ("\n" if docs else "")


def summary(answers: list[Answer], node_mode: str) -> list[str]:
    """After the table: what will and will not be collected, and the one thing to do."""
    refused = missing(answers)
    required = [a for a in refused if not a.check.optional]
    lines = []
    if not refused:
        lines.append("pre-flight: every permission the run needs is granted")
        return lines
    if nodes_refused(answers):
        lines.append("pre-flight: node files will NOT be collected (no debug pod will be "
                     "started): " + "; ".join(describe(c) for c in nodes_refused(answers))
                     + " refused")
    lost = ", ".join(describe(a.check) for a in required if not a.check.nodes)
    if lost:
        lines.append(f"pre-flight: will NOT be collected (no permission): {lost}")
    optional = ", ".join(describe(a.check) for a in refused if a.check.optional)
    if optional:
        lines.append(f"pre-flight: optional, refused: {optional}")
    lines.append("pre-flight: to collect everything, ask your cluster admin to grant this to "
                 "your identity (a RoleBinding/ClusterRoleBinding to it), then rerun with "
                 "--preflight to check:")
    return lines
