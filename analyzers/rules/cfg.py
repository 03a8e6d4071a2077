"""CFG: versions, support and configuration of the GPU Operator."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.preconditions import Need
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.operand_versions import expected as expected_operands
from analyzers.operand_versions import fits, image_version
from analyzers.products import UNLISTED, classify
from analyzers.products import Verdict as ProductVerdict
from analyzers.refs import Link
from analyzers.releases import SupportStatus
from analyzers.releases import support as support_of
from analyzers.rule import CannotJudge, Context, Rule, cluster, node
from analyzers.rules.common import RUNTIME_FILES, field, names, node_ref, running_operator
from bundle.evidence import Locator, at_pointer, first_line
from bundle.kube import HelmRevision, Node


def operator_release(ctx: Context) -> tuple[str, list[HelmRevision]] | None:
    """The Helm release of the GPU Operator chart, with its revisions."""
    releases = ctx.bundle.cluster.helm
    for name, revisions in sorted(releases.items()):
        if revisions and revisions[-1].chart.startswith("gpu-operator"):
            return name, revisions
    return None


class ToolkitDisabledHostNotConfigured(Rule):
    """The Container Toolkit is disabled while containerd has no nvidia runtime.

    "Binary present is not configured": the ClusterPolicy sets ``toolkit.enabled:
    false`` (often because ``nvidia-ctk`` is installed on the hosts), but the loaded
    containerd configuration of GPU nodes has no ``nvidia`` runtime. A host binary
    configures nothing by being there; with the toolkit operand disabled nobody
    writes the runtime into containerd.

    Why it matters:
    The operator's own pods use ``runtimeClassName: nvidia``; with no handler their
    sandboxes fail, the device plugin never starts and no GPU is advertised, while
    ``nvidia-smi`` on the host still works and misleads the diagnosis.

    Remediation:
    Enable the toolkit through Helm, keeping every value set before:
      helm upgrade gpu-operator nvidia/gpu-operator -n gpu-operator \\
        --reuse-values --set toolkit.enabled=true
    ``--reuse-values`` matters: without it the chart defaults return, and a host-driver
    setup loses ``driver.enabled=false`` — the operator would then try to install a
    driver over the host one.
    """

    id = "CFG004"
    slug = "toolkit-disabled-host-not-configured"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (
        cluster("clusterpolicies.json"),
        node("containerd/config-dump.toml"),
        cluster("helm/*.json", optional=True),
        node("host/nvidia-ctk.txt", optional=True),
        *RUNTIME_FILES,
    )
    tags = ("runtime", "configuration")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        policy = facts.cluster_policy
        if policy is None or policy.component_enabled("toolkit") is not False:
            return
        affected = [n for n in facts.gpu_nodes if facts.runtime(n).has_nvidia is False]
        if not affected:
            return
        evidence: list[Evidence | Locator] = [
            field(policy, "spec.toolkit.enabled: false", "spec", "toolkit", "enabled")]
        with_ctk = []
        for node_name in affected:
            artifacts = ctx.bundle.node(node_name)
            text = artifacts.host("nvidia-ctk.txt") or ""
            hit = first_line(artifacts.path("host/nvidia-ctk.txt"), text, "nvidia-ctk")
            if hit is not None:
                with_ctk.append(node_name)
                if len(with_ctk) <= 2:
                    evidence.append(Evidence(path=hit.path, line=hit.line, excerpt=hit.excerpt))
        for node_name in affected[:2]:
            evidence.append(Evidence(path=facts.runtime(node_name).dump_path,
                                     excerpt="(no runtimes.nvidia table in the loaded config)"))
        release = operator_release(ctx)
        helm_cmd: list[sh.Arg] = ["helm", "upgrade", "gpu-operator", "nvidia/gpu-operator"]
        namespace = sh.namespace(facts.operator_namespace or "gpu-operator")
        release_name: str | sh.Value = "gpu-operator"
        if release is not None:
            name, revisions = release
            latest = revisions[-1]
            release_name = sh.release(name)
            helm_cmd = ["helm", "upgrade", release_name, "nvidia/gpu-operator"]
            chart_version = latest.chart.removeprefix("gpu-operator-")
            if chart_version:
                helm_cmd += ["--version", sh.version(chart_version)]
            if latest.value("toolkit.enabled") is False:
                evidence.append(at_pointer(latest.source_path, latest.source_pointer,
                                           "toolkit.enabled: false (revision "
                                           f"{latest.revision}, {latest.status})",
                                           "values", "toolkit", "enabled"))
        ctk = (f" nvidia-ctk is installed on {names(with_ctk)}, but a binary on the host "
               "configures nothing." if with_ctk else "")
        summary = (f"ClusterPolicy {policy.metadata.name} sets toolkit.enabled=false, so the "
                   f"operator deploys no Container Toolkit, and containerd on "
                   f"{names(affected)} has no nvidia runtime.{ctk} Operand pods that need "
                   "the handler cannot start there.")
        remediation = sh.lines(
            "# look first: what the release sets today",
            sh.cmd("helm", "-n", namespace, "get", "values", release_name),
            "kubectl get clusterpolicy -o jsonpath='{.items[*].spec.toolkit.enabled}'",
            "# enable the toolkit, keeping every value set before (driver.enabled=false!)",
            sh.cmd(*helm_cmd, "-n", namespace, "--reuse-values", "--set", "toolkit.enabled=true"),
            "# watch it roll out, then confirm on each node",
            sh.cmd("kubectl", "-n", namespace, "get", "pods", "-o", "wide",
                   "-l", "app=nvidia-container-toolkit-daemonset"),
            "containerd config dump | grep -c 'runtimes.nvidia'   # > 0 on every GPU node",
            "# Without --reuse-values the chart defaults return: driver.enabled=false is lost",
            "# and the operator would try to install a driver over the host driver.",
        )
        objects = [ObjectRef(kind="ClusterPolicy", name=policy.metadata.name)]
        objects += [node_ref(n) for n in affected]
        yield self.finding(policy.metadata.name, summary, nodes=affected, objects=objects,
                           evidence=evidence, remediation=remediation)


# ------------------------------------------------------------------------ CFG001


def _operand_mismatches(ctx: Context, version: str) -> list[tuple[str, Evidence]]:
    wanted = expected_operands(version)
    namespace = ctx.facts.operator_namespace
    seen: set[tuple[str, str]] = set()
    found: list[tuple[str, Evidence]] = []
    pods = (ctx.bundle.cluster.pods if namespace is None
            else ctx.facts.pods_by_namespace.get(namespace, []))
    for pod in sorted(pods, key=lambda p: p.name):
        if pod.terminated:
            continue
        sections = (("initContainers", pod.spec.init_containers),
                    ("containers", pod.spec.containers))
        for section, containers in sections:
            for index, item in enumerate(containers):
                repository, actual = image_version(item.image)
                want = wanted.get(repository)
                if want is None or actual is None or fits(want.version, actual):
                    continue
                if (repository, actual) in seen:
                    continue
                seen.add((repository, actual))
                shown = want.version if want.version.count(".") >= 2 else f"{want.version}.x"
                found.append((f"{want.label} {actual} (expected {shown} for {want.scope}) in "
                              f"{pod.namespace}/{pod.name}",
                              field(pod, f"{pod.namespace}/{pod.name} {item.name} image "
                                         f"{item.image}",
                                    "spec", section, index, "image")))
    return found


_STATUS_SEVERITY = {
    SupportStatus.END_OF_SUPPORT: Severity.MEDIUM,
    SupportStatus.DEPRECATED: Severity.LOW,
    SupportStatus.UNKNOWN: Severity.INFO,
    SupportStatus.SUPPORTED: Severity.LOW,
}
_STATUS_MEANING = {
    SupportStatus.END_OF_SUPPORT: "it gets no fixes, not even for CVEs, and NVIDIA support "
                                  "will ask for an upgrade first",
    SupportStatus.DEPRECATED: "it gets only critical bug and CVE fixes; plan the move to the "
                              "supported line",
    SupportStatus.UNKNOWN: "this gpu-triage's release table cannot place it; check NVIDIA's "
                           "lifecycle page",
    SupportStatus.SUPPORTED: "it is the supported line",
}


class OperatorSupportStatus(Rule):
    """GPU Operator release support status, and operands from another release.

    Reads the running operator version from the operator Deployment's image tag (else
    the operator pod's image, else the Helm release's app version) and looks it up in
    the release table (``analyzers/data/operator_releases.toml``: Supported, Deprecated,
    End of Support). Operand images in the operator namespace whose versions do not
    belong to that release (``analyzers/data/operand_versions.toml``, only where the
    table knows them) are listed too.

    Why it matters:
    An End-of-Support operator gets no fixes, not even for CVEs, and many known
    problems are fixed only in later lines. Operand images left from another release
    (a partial upgrade, a stale pin in the ClusterPolicy) run combinations NVIDIA never
    tested.

    Remediation:
    Check ``helm -n gpu-operator history gpu-operator`` and the ClusterPolicy's per-component
    ``version`` fields; upgrade one release line at a time (NVIDIA supports upgrades
    within a line or to the next one), with ``--reuse-values``, one node pool at a time.
    """

    id = "CFG001"
    slug = "operator-support-status"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (
        cluster("deployments.json"),
        cluster("pods.json", optional=True),
        cluster("helm/*.json", optional=True),
    )
    needs = (Need.OPERATOR,)
    tags = ("versions",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        found = running_operator(ctx)
        if found is None:
            return
        text, source_evidence, subject, where = found
        support = support_of(text)
        if support is None:
            return
        mismatches = _operand_mismatches(ctx, support.version)
        if support.status is SupportStatus.SUPPORTED and not mismatches:
            return
        parts = [f"The GPU Operator runs {support.version} (from the {where}); "
                 f"{support.note}: {_STATUS_MEANING[support.status]}."]
        if mismatches:
            listed = "; ".join(text for text, _ in mismatches[:6])
            more = f" and {len(mismatches) - 6} more" if len(mismatches) > 6 else ""
            parts.append(f"Operand images that do not belong to that release: {listed}{more}. "
                         "A version pinned on purpose in the ClusterPolicy "
                         "(spec.<component>.version) is a choice; otherwise an upgrade "
                         "stopped half way.")
        severity = _STATUS_SEVERITY[support.status]
        namespace = sh.namespace(ctx.facts.operator_namespace or "gpu-operator")
        remediation = sh.lines(
            sh.cmd("helm", "-n", namespace, "list", sh.raw(";"), "helm", "-n", namespace,
                   "history", sh.raw("<release>")),
            sh.cmd("kubectl", "-n", namespace, "get", "pods", "-o",
                   sh.raw("jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}"
                          "{.spec.containers[*].image}{\"\\n\"}{end}'")),
            "kubectl get clusterpolicy -o yaml | grep -nE '^\\s+version:'",
            "# upgrade one release line at a time, keeping values:",
            sh.cmd("helm", "upgrade", sh.raw("<release>"), "nvidia/gpu-operator", "-n", namespace,
                   "--version", sh.raw("<next>"), "--reuse-values"))
        evidence = [source_evidence] + [ev for _, ev in mismatches[:6]]
        yield self.finding(subject, " ".join(parts), severity=severity,
                           objects=[ObjectRef(kind="Deployment",
                                              namespace=subject.split("/", 1)[0],
                                              name=subject.split("/", 1)[1])],
                           evidence=evidence, remediation=remediation)


# ------------------------------------------------------------------------ CFG002


def _mig_wanted(node_obj: Node) -> str | None:
    labels = node_obj.labels
    config = labels.get("nvidia.com/mig.config")
    if config and config != "all-disabled":
        return f"label nvidia.com/mig.config={config}"
    strategy = labels.get("nvidia.com/mig.strategy")
    if strategy in ("single", "mixed"):
        return f"label nvidia.com/mig.strategy={strategy}"
    mig_resources = sorted(r for r in node_obj.status.capacity if r.startswith("nvidia.com/mig-"))
    if mig_resources:
        return f"resource {mig_resources[0]} in its capacity"
    return None


class UnsupportedGpuProduct(Rule):
    """GPUs outside the GPU Operator's supported list (GeForce / consumer cards).

    Classifies each GPU node's products — the ``nvidia.com/gpu.product`` label and
    nvidia-smi's product name and brand — against the supported families in
    ``analyzers/data/gpu_products.toml`` (data centre and professional RTX / T-series).
    GeForce and TITAN cards get a support caveat and "MIG impossible"; Jetson and other
    integrated GPUs are outside the operator's scope; anything else not listed is noted.

    Why it matters:
    NVIDIA validates the GPU Operator only on the listed GPUs. Consumer cards often
    work, but problems on them are not a supported case, and features such as MIG do
    not exist on them at all.

    Remediation:
    Nothing to fix on the cluster; state the caveat in the ticket, and do not plan MIG
    on these nodes. ``kubectl get nodes -L nvidia.com/gpu.product`` lists the products.
    """

    id = "CFG002"
    slug = "unsupported-gpu-product"
    severity = Severity.LOW
    confidence = Confidence.CONFIRMED
    inputs = (cluster("nodes.json"), node("nvidia-smi.xml", optional=True))
    tags = ("support",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        # A cluster has a handful of products: classify each once, not once per GPU.
        verdicts: dict[tuple[str, str | None], ProductVerdict] = {}

        def classified(product: str, brand: str | None = None) -> ProductVerdict:
            verdict = verdicts.get((product, brand))
            if verdict is None:
                verdict = verdicts[(product, brand)] = classify(product, brand)
            return verdict

        found: list[Finding] = []
        known = 0  # GPU nodes that name a product at all
        for node_name in facts.gpu_nodes:
            node_obj = facts.nodes.get(node_name)
            seen: dict[str, tuple[ProductVerdict, Evidence]] = {}
            if node_obj is not None:
                for key, value in sorted(node_obj.labels.items()):
                    if key == "nvidia.com/gpu.product" or (
                            key.startswith("nvidia.com/mig-") and key.endswith(".product")):
                        verdict = classified(value)
                        seen.setdefault(verdict.family or value, (verdict, field(
                            node_obj, f"{node_name}: {key}={value}", "metadata", "labels", key)))
            smi = ctx.bundle.node(node_name).nvidia_smi
            path = ctx.bundle.node(node_name).path("nvidia-smi.xml")
            xml = ctx.bundle.read_text(path) if smi is not None else None
            for gpu in smi.gpus if smi is not None else ():
                if not gpu.product_name:
                    continue
                verdict = classified(gpu.product_name, gpu.product_brand)
                if (verdict.family or gpu.product_name) in seen:
                    continue  # the first GPU of a family is its evidence
                hit = first_line(path, xml or "", gpu.product_name)
                seen[verdict.family or gpu.product_name] = (verdict, Evidence(
                    path=path, line=hit.line if hit else None,
                    excerpt=f"{gpu.bus_id}: {gpu.product_name} (brand "
                            f"{gpu.product_brand or 'unknown'})"))
            known += bool(seen)
            flagged = [(v, e) for v, e in seen.values()
                       if v.klass not in ("datacenter", "professional")]
            if flagged:
                found.append(self._finding(node_name, node_obj, flagged))
        if facts.gpu_nodes and not known:
            raise CannotJudge("no GPU node names its product (no nvidia.com/gpu.product "
                              "label, no readable nvidia-smi.xml)")
        return found

    def _finding(self, node_name: str, node_obj: Node | None,
                 flagged: list[tuple[ProductVerdict, Evidence]]) -> Finding:
        products = "; ".join(f"{v.product}: {v.note}" for v, _ in flagged)
        summary = f"{node_name} has GPUs outside the GPU Operator's supported list — {products}."
        no_mig = [v for v, _ in flagged if v.mig is False]
        severity = Severity.LOW
        if no_mig:
            summary += " MIG is impossible on these cards."
            wanted = _mig_wanted(node_obj) if node_obj is not None else None
            if wanted:
                summary += f" Yet the node asks for MIG ({wanted}); that cannot be applied."
        if all(v.klass == UNLISTED for v, _ in flagged):
            severity = Severity.INFO
        remediation = sh.lines(
            sh.cmd("kubectl", "get", "node", sh.node(node_name), "-L",
                   "nvidia.com/gpu.product,nvidia.com/mig.capable,nvidia.com/mig.config"),
            "# state the support caveat in the ticket; do not plan MIG on consumer cards")
        return self.finding(node_name, summary, severity=severity, nodes=[node_name],
                            objects=[node_ref(node_name)], evidence=[e for _, e in flagged],
                            remediation=remediation)


# ------------------------------------------------------------------------ CFG003


def _label_int(labels: dict[str, str], key: str) -> int | None:
    value = labels.get(key, "")
    return int(value) if value.isdigit() else None


class TimeSlicingExplained(Rule):
    """Time-slicing explained with the node's own numbers.

    For each GPU node where the device plugin shares GPUs (the sharing config the
    ClusterPolicy names, else the GFD labels ``nvidia.com/gpu.sharing-strategy`` and
    ``nvidia.com/gpu.replicas``), shows the advertised slots against the physical GPUs
    (nvidia-smi, else ``nvidia.com/gpu.count``), the memory each slot "has" by division,
    and what the slots do not give.

    Why it matters:
    ``replicas: N`` registers the same device N times. The slots share one GPU's
    memory and faults: one pod can take all the memory or crash the others, so the
    per-slot memory guarantee is 0, and DCGM can no longer attribute usage to pods.
    Users who read "4 GPUs" plan as if they had four.

    Remediation:
    For isolation use MIG (on GPUs that have it) or whole GPUs; keep time-slicing for
    light, trusted workloads and size them by the whole GPU's memory.
    """

    id = "CFG003"
    slug = "time-slicing-explained"
    severity = Severity.INFO
    confidence = Confidence.CONFIRMED
    inputs = (
        cluster("nodes.json"),
        cluster("configmaps.json", optional=True),
        cluster("clusterpolicies.json", optional=True),
        node("nvidia-smi.xml", optional=True),
        cluster("pods.json", optional=True),
    )
    tags = ("sharing",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        setup = facts.gpu_sharing
        for node_name in facts.gpu_nodes:
            node_obj = facts.nodes.get(node_name)
            if node_obj is None:
                continue
            config = setup.for_node(node_obj)
            items: list[tuple[str, int, str, str]] = []  # resource, replicas, strategy, from
            evidence: list[Evidence] = []
            if config is not None and config.strategy is not None and setup.configmap:
                cm = setup.configmap
                source = f"config key '{config.key}' of ConfigMap {cm.metadata.name}"
                for item in config.resources:
                    items.append((item.advertised, item.replicas, config.strategy, source))
                evidence.append(field(cm, f"ConfigMap {cm.metadata.name} key {config.key}: "
                                          f"{config.strategy}, "
                                          + ", ".join(f"{r.name} replicas {r.replicas}"
                                                      for r in config.resources),
                                      "data", config.key))
            else:
                strategy = node_obj.labels.get("nvidia.com/gpu.sharing-strategy", "")
                replicas = _label_int(node_obj.labels, "nvidia.com/gpu.replicas") or 1
                if strategy in ("time-slicing", "mps") and replicas > 1:
                    shared = "nvidia.com/gpu.shared"
                    resource = shared if shared in node_obj.status.capacity else "nvidia.com/gpu"
                    items.append((resource, replicas, strategy, "the node's GFD labels"))
                    evidence.append(field(node_obj, f"{node_name}: nvidia.com/gpu.sharing-"
                                                    f"strategy={strategy}, nvidia.com/gpu."
                                                    f"replicas={replicas}",
                                          "metadata", "labels", "nvidia.com/gpu.replicas"))
            lines = [text for item in items
                     if (text := self._explain(ctx, node_obj, item, evidence)) is not None]
            if not lines:
                continue
            links: list[Link] = []
            if setup.configmap is not None and any("another config" in ln for ln in lines):
                cm = setup.configmap
                links.append(refs.SC006.configmap(
                    cm.metadata.namespace or facts.operator_namespace or "gpu-operator",
                    cm.metadata.name))
            summary = (" ".join(lines) + " Slots share one GPU: no memory or fault isolation "
                       "(one pod can take all the memory or crash the others), and DCGM "
                       "cannot attribute GPU usage to pods or containers under sharing.")
            remediation = sh.lines(
                sh.cmd("kubectl", "get", "node", sh.node(node_name), "-o",
                       sh.raw("jsonpath='{.status.capacity}{\"\\n\"}{.metadata.labels}'")),
                "# for isolation use MIG or whole GPUs; size shared workloads by the "
                "whole GPU's memory")
            yield self.finding(node_name, summary, nodes=[node_name],
                               objects=[node_ref(node_name)], evidence=evidence,
                               remediation=remediation, caused_by=links)

    def _explain(self, ctx: Context, node_obj: Node, item: tuple[str, int, str, str],
                 evidence: list[Evidence]) -> str | None:
        resource, replicas, strategy, source = item
        counts = ctx.facts.accounting.get(node_obj.name)
        advertised = counts.count(resource).capacity if counts is not None else None
        if not advertised:
            return None
        labels = node_obj.labels
        smi = ctx.bundle.node(node_obj.name).nvidia_smi
        memory: int | None = None
        if resource.startswith("nvidia.com/mig-"):
            profile = resource.removeprefix("nvidia.com/").removesuffix(".shared")
            physical = _label_int(labels, f"nvidia.com/{profile}.count")
            memory = _label_int(labels, f"nvidia.com/{profile}.memory")
            unit = f"{profile} MIG device"
            physical_from = "GFD labels"
        else:
            unit = "physical GPU"
            if smi is not None and smi.gpus:
                physical = len(smi.gpus)
                memory = smi.gpus[0].fb_total_mib
                physical_from = "nvidia-smi"
            else:
                physical = _label_int(labels, "nvidia.com/gpu.count")
                memory = _label_int(labels, "nvidia.com/gpu.memory")
                physical_from = "label nvidia.com/gpu.count"
        if memory is None:
            memory = _label_int(labels, "nvidia.com/gpu.memory")
        evidence.append(Evidence(
            path=node_obj.source_path,
            pointer=f"{node_obj.source_pointer}/status/capacity/{resource.replace('/', '~1')}",
            excerpt=f"{node_obj.name} capacity {resource}: {advertised}"))
        per_gpu = f"{physical} {unit}(s)" if physical is not None else f"? {unit}(s)"
        text = (f"{node_obj.name} advertises {advertised} {resource} slots on {per_gpu} "
                f"({physical_from}; {strategy}, replicas {replicas}, from {source}).")
        if physical is not None and physical * replicas != advertised:
            text += (f" {physical} × {replicas} would be {physical * replicas}: the plugin "
                     "there runs another config (changed without a restart, or another key).")
        if memory:
            share = memory // replicas
            text += (f" {memory} MiB ÷ {replicas} = {share} MiB per slot is arithmetic; the "
                     "guarantee per slot is 0.")
        if strategy == "mps":
            text += " (MPS caps each client's memory share, but faults are still shared.)"
        return text


RULES: list[type[Rule]] = [
    OperatorSupportStatus,  # CFG001
    UnsupportedGpuProduct,  # CFG002
    TimeSlicingExplained,  # CFG003
    ToolkitDisabledHostNotConfigured,  # CFG004
]
