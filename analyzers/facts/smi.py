"""How nvidia-smi failed on a node, read from the bundle once per run.

The collector runs ``nvidia-smi -q -x`` on every node and records how it ended in the
manifest: the exit code and the error (its stderr, else ``exit status N``). nvidia-smi
prints its own failure on stdout, so the words may also sit in ``nvidia-smi.xml`` in
place of the XML. That is not a collection gap: it is the node saying its driver does
not work.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzers.knowledge import signatures
from analyzers.results.models import Evidence
from bundle import Bundle, specs
from bundle.evidence import clip
from bundle.manifest import ManifestItem

SMI_FILE = specs.NVIDIA_SMI


# Wordings (analyzers/data/signatures.toml): no driver / no device, and the version
# mismatch NVML reports everywhere.
NO_DRIVER = "nvidia-smi-no-driver"


MISMATCH = "nvml-driver-library-mismatch"


MISMATCH_MEANING = "the driver's libraries and kernel module differ in version"


# nvidia-smi's documented return values (nvidia-smi(1), "RETURN VALUE";
# https://docs.nvidia.com/deploy/nvidia-smi/index.html; NVML's nvmlReturn_t for 17 and 18,
# https://nvidia.github.io/cuda-python/cuda-bindings/latest/module/generated/cuda.bindings.nvml.Return.html)
# that say the driver or GPU is not usable. 127 (not installed), 124 (timed out) and 126
# are the collector's business.
EXIT_MEANINGS = {
    6: "no GPU was found (exit code 6)",
    9: "the NVIDIA driver is not loaded (exit code 9)",
    12: "the NVML library could not be found or loaded (exit code 12)",
    14: "a GPU's infoROM is corrupted (exit code 14)",
    15: "a GPU has fallen off the bus or is otherwise inaccessible (exit code 15)",
    17: "the operating system or a cgroup blocks the GPU control device (exit code 17)",
    # nvidia-smi exits with NVML's return code: 18 is NVML_ERROR_LIB_RM_VERSION_MISMATCH
    18: MISMATCH_MEANING,
}


NOT_RUN = frozenset({0, 124, 126, 127})


NOT_LOADED = "nvidia-smi cannot communicate with the driver: no NVIDIA kernel module is loaded"


@dataclass(frozen=True, slots=True)
class SmiFailure:
    """How nvidia-smi failed on one node: what it said, what that means, and where."""

    node: str
    meaning: str
    said: str
    exit_code: int | None
    evidence: tuple[Evidence, ...]


def _meaning(text: str, exit_code: int | None) -> str | None:
    """What nvidia-smi's words (else its exit code) say about the node's driver."""
    chosen = tuple(signatures.get(i) for i in (NO_DRIVER, MISMATCH))
    for hit in signatures.match(text, "event", signatures=chosen):
        if hit.signature.id == MISMATCH:
            return MISMATCH_MEANING
        if "communicate" in hit.text.lower():
            return NOT_LOADED
        return "the driver is loaded but found no GPU"
    if exit_code is not None:
        return EXIT_MEANINGS.get(exit_code)
    return None


def recognised(item: ManifestItem) -> bool:
    """A manifest item of nvidia-smi that ran and failed in a way that says something
    about the node's driver (a finding about the node, not a collection gap)."""
    if not item.path.endswith("/" + SMI_FILE) or item.exit_code in NOT_RUN:
        return False
    return _meaning(item.error or "", item.exit_code) is not None


def read_failure(bundle: Bundle, name: str) -> SmiFailure | None:
    """How nvidia-smi failed on ``name``: from its manifest item (error, exit code) and
    from the words it left in nvidia-smi.xml instead of XML; None where it did not fail
    in a way that says something about the driver. ``Facts.smi_failure`` keeps it."""
    path = specs.node_file(name, SMI_FILE)
    found = bundle.manifest.located(path)
    evidence: list[Evidence] = []
    said = ""
    exit_code: int | None = None
    if found is not None:
        index, item = found
        exit_code = item.exit_code
        if item.error and item.exit_code not in NOT_RUN:
            said = item.error
            code = f"exit code {item.exit_code}: " if item.exit_code is not None else ""
            evidence.append(Evidence(path=specs.MANIFEST, pointer=f"/items/{index}/error",
                                     excerpt=clip(code + said)))
    text = bundle.read_text(path) if bundle.has(path) else None
    if text and not text.lstrip().startswith("<"):
        chosen = tuple(signatures.get(i) for i in (NO_DRIVER, MISMATCH))
        hits = signatures.match(text, "event", signatures=chosen)
        if hits:
            said = hits[0].text.strip()
            evidence.append(Evidence(path=path, line=hits[0].line, excerpt=clip(said)))
    if not evidence:
        return None
    meaning = _meaning(said, exit_code)
    if meaning is None:
        return None
    return SmiFailure(name, meaning, said, exit_code, tuple(evidence))
