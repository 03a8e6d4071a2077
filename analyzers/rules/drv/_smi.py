"""DRV009: nvidia-smi itself failed on the node, and which findings say why (the
failure is read in analyzers/facts/smi.py, its causes in analyzers/facts/driver.py)."""

from __future__ import annotations

from analyzers import refs
from analyzers.facts import driver
from analyzers.facts.driver import SmiCause
from analyzers.refs import Link
from analyzers.rule import Context

# Each cause: the finding that reports it, and DRV009's sentence for it.
_LINKS: dict[SmiCause, tuple[str, str]] = {
    SmiCause.MODULE_REFUSED: ("DRV004", "Secure Boot refuses the unsigned nvidia module "
                                           "(see DRV004)"),
    SmiCause.UNUSABLE: ("DRV003", "the driver is not usable on the node (see DRV003)"),
    SmiCause.INSTALL_BROKEN: ("OP010", "the driver container cannot install for the "
                                          "node's kernel (see OP010)"),
    SmiCause.DRIVER_CONTAINER: ("OP001", "the operator's driver stage is failing on the "
                                            "node (see OP001)"),
}


def _explanations(ctx: Context, name: str) -> list[tuple[Link, str]]:
    """(finding id, sentence) of the findings that explain the failure."""
    return [(refs.link(_LINKS[cause][0], name), _LINKS[cause][1])
            for cause in driver.smi_causes(ctx.facts, name)]
