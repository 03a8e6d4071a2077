"""Whether the GPU Operator is evidently meant to run in the cluster.

A cluster without the operator — a standalone NVIDIA device plugin (Helm chart
``nvidia-device-plugin``, any namespace), with or without NFD — is a supported setup,
not a broken one. Findings that only make sense for the operator (a missing
ClusterPolicy or CRD, NFD labels the operator would need) ask this first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from analyzers.facts.operands import OperandPod
from bundle import Bundle, specs
from bundle.crds import POLICY_CRD
from bundle.kube import Pod

STANDALONE = ("the GPU Operator is not installed (no operator pod, ClusterPolicy, operand, "
              "chart or CRD): a cluster without it, such as a standalone device plugin, "
              "needs no ClusterPolicy or NFD labels")
_DEPLOY_LABEL = "nvidia.com/gpu.deploy."


def signs(bundle: Bundle, operator_pods: Sequence[Pod],
          operands: Mapping[str, Mapping[str, OperandPod]],
          image_owner: str | None = None) -> list[str]:
    """What in the bundle says the operator is installed or meant to be, first first;
    empty for a cluster that runs GPUs without it. ``image_owner`` names a Deployment
    that runs the operator's image under another name (``nvidia/nvidia-gpu-operator``)."""
    cluster = bundle.cluster
    found: list[str] = []
    if not bundle.has(specs.PODS):
        # without the pods nothing rules the operator out: judge as for an operator cluster
        found.append("the pods were not collected, so the operator cannot be ruled out")
    if operator_pods:
        found.append(f"operator pod {operator_pods[0].namespace}/{operator_pods[0].name}")
    if bundle.has(specs.CLUSTERPOLICIES) and cluster.clusterpolicies:
        found.append(f"ClusterPolicy {cluster.clusterpolicies[0].metadata.name}")
    if any(operands.values()):
        found.append("operand pods of the operator")
    for release, revisions in sorted(cluster.helm.items()):
        if revisions and revisions[-1].chart.startswith("gpu-operator"):
            found.append(f"Helm release {release} ({revisions[-1].chart})")
            break
    for deployment in cluster.deployments:
        if deployment.metadata.name == "gpu-operator":
            found.append(f"Deployment {deployment.metadata.namespace}/gpu-operator")
            break
    else:
        if image_owner is not None:
            found.append(f"Deployment {image_owner} runs the operator's image")
    if any(key.startswith(_DEPLOY_LABEL) for node in cluster.nodes for key in node.labels):
        found.append("nodes carry nvidia.com/gpu.deploy.* labels")
    namespace = bundle.manifest.operator_namespace
    if namespace and bundle.paths_under(specs.logs_of_namespace(namespace)):
        found.append(f"pod logs were collected from the {namespace} namespace")
    if _crd_listed(bundle):
        found.append(f"the {POLICY_CRD} CRD exists")
    return found


def _crd_listed(bundle: Bundle) -> bool:
    return any(crd.name == POLICY_CRD for crd in bundle.cluster.crds or ())
