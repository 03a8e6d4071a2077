"""The ``inspect`` line of a finding (``analyze --inspect``): the kubectl command that
shows the finding's object when ``gpu-triage serve BUNDLE`` is running, so an engineer
goes from a finding to the object in one paste. The first object of a kind that serve
answers for is shown, else the finding's first node; names are shell-quoted."""

from __future__ import annotations

import shlex

from analyzers.results.models import Finding

# ObjectRef kind -> how kubectl names the resource (the kinds gpu-triage serve answers for)
RESOURCES = {"Pod": "pod", "Node": "node", "Namespace": "namespace", "Event": "event",
             "ConfigMap": "configmap", "ResourceQuota": "resourcequota",
             "DaemonSet": "daemonset", "Deployment": "deployment",
             "RuntimeClass": "runtimeclass", "CustomResourceDefinition": "crd",
             "ClusterPolicy": "clusterpolicies.nvidia.com",
             "NVIDIADriver": "nvidiadrivers.nvidia.com"}


def command(finding: Finding) -> str | None:
    for ref in finding.objects:
        resource = RESOURCES.get(ref.kind)
        if resource is not None:
            where = f" -n {shlex.quote(ref.namespace)}" if ref.namespace else ""
            return f"kubectl describe {resource}{where} {shlex.quote(ref.name)}"
    if finding.nodes:
        return f"kubectl describe node {shlex.quote(finding.nodes[0])}"
    return None


def preamble(bundle: str) -> str:
    """Said once above the inspect lines: what they run against."""
    return (f"inspect lines run against `gpu-triage serve {shlex.quote(bundle)}` "
            "(start it, then export the KUBECONFIG it prints)")
