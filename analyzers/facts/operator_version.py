"""Which GPU Operator runs, read once for the glance, rule CFG001 and ``diff``.

The image the operator container runs is the first answer: from the operator
Deployment (the one in the operator's namespace first), else from the operator pod
when no Deployment names the image. The Helm release of the ``gpu-operator`` chart is
the second: its deployed revision (else its latest), app version before chart version.
An image whose tag holds no operator version (``latest``, a digest) gives way to Helm.

An operator container is one whose image repository is ``gpu-operator`` (any registry:
``nvcr.io/nvidia/gpu-operator``, a mirror); the validator's ``gpu-operator-validator``
is not one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bundle import versions
from bundle.kube import Deployment, HelmRevision, Pod

OPERATOR_IMAGE = "gpu-operator"
CHART = "gpu-operator"


@dataclass(frozen=True, slots=True)
class OperatorImage:
    """The operator container's image and the object (Deployment or Pod) it was read from;
    ``index`` is the container's position in that object's containers."""

    image: str
    owner: Deployment | Pod
    index: int

    @property
    def tag(self) -> str:
        """The image's tag (``v26.3.1``); empty for an untagged or digest-only image."""
        name, _, tag = self.image.split("@", 1)[0].rpartition(":")
        return "" if not name or "/" in tag else tag

    @property
    def version(self) -> versions.Version | None:
        return versions.operator_release(self.tag)


@dataclass(frozen=True, slots=True)
class OperatorChart:
    """A revision of the Helm release that installed the ``gpu-operator`` chart."""

    release: str
    revision: HelmRevision

    @property
    def key(self) -> str:
        """The field the version is read from: ``app_version``, else ``chart``."""
        return "app_version" if self.revision.app_version else "chart"

    @property
    def text(self) -> str:
        return self.revision.app_version or self.revision.chart

    @property
    def version(self) -> versions.Version | None:
        return versions.operator_release(self.text)


@dataclass(frozen=True, slots=True)
class OperatorVersion:
    """What the bundle says about the operator's version: the image, the Helm chart,
    and which of the two the version is read from (``source``; None: neither holds one)."""

    image: OperatorImage | None
    chart: OperatorChart | None

    @property
    def source(self) -> OperatorImage | OperatorChart | None:
        if self.image is not None and self.image.version is not None:
            return self.image
        if self.chart is not None and self.chart.version is not None:
            return self.chart
        return None

    @property
    def version(self) -> versions.Version | None:
        source = self.source
        return source.version if source is not None else None

    @property
    def text(self) -> str | None:
        """The text the version is read from: the image tag (``v26.3.1``), the app version
        or the chart (``gpu-operator-v26.3.1``)."""
        source = self.source
        if isinstance(source, OperatorImage):
            return source.tag
        return source.text if source is not None else None


def _operator_container(images: Iterable[str]) -> int | None:
    for index, image in enumerate(images):
        if versions.image(image)[0] == OPERATOR_IMAGE:
            return index
    return None


def operator_image(deployments: Iterable[Deployment], operator_pods: Iterable[Pod],
                   namespace: str | None) -> OperatorImage | None:
    """The operator container: from a Deployment (``namespace``'s first, then by
    namespace and name), else from one of the operator's pods (in bundle order)."""
    ordered = sorted(deployments, key=lambda d: (d.metadata.namespace != namespace,
                                                 d.metadata.namespace or "", d.metadata.name))
    for deployment in ordered:
        containers = deployment.spec.template.spec.containers
        index = _operator_container(c.image for c in containers)
        if index is not None:
            return OperatorImage(containers[index].image, deployment, index)
    for pod in operator_pods:
        index = _operator_container(c.image for c in pod.spec.containers)
        if index is not None:
            return OperatorImage(pod.spec.containers[index].image, pod, index)
    return None


def operator_chart(helm: Mapping[str, list[HelmRevision]]) -> OperatorChart | None:
    """The first release (by name) that installed the chart: its deployed revision, else
    its latest."""
    for release, revisions in sorted(helm.items()):
        charts = [r for r in revisions if r.chart.startswith(CHART)]
        if charts:
            deployed = [r for r in charts if r.status == "deployed"] or charts
            return OperatorChart(release, deployed[-1])
    return None
