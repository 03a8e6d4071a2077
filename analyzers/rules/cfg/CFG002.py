"""CFG002: GPUs outside the GPU Operator's supported list (GeForce / consumer cards)."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts.evidence import field
from analyzers.knowledge.products import UNLISTED, classify
from analyzers.knowledge.products import Verdict as ProductVerdict
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import CannotJudge, Context, Rule, cluster, node
from analyzers.rules.cfg._base import _mig_wanted
from analyzers.rules.common import node_ref
from bundle import specs
from bundle.evidence import first_line
from bundle.kube import Node


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
    inputs = (cluster(specs.NODES), node(specs.NVIDIA_SMI, optional=True))
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
            about = ctx.facts.node(node_name)
            smi = about.nvidia_smi
            path = about.path(specs.NVIDIA_SMI)
            xml = about.text(specs.NVIDIA_SMI) if smi is not None else None
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
