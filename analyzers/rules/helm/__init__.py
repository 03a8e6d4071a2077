"""HELM: the operator's Helm release history (values dropped by an upgrade, stuck releases).

Each rule lives alone in ``HELM<nnn>.py``; ``_*.py`` modules are the family's private
helpers. ``RULES`` (the ``gpu_triage.rules`` entry point) is found from the files, in ID
order.
"""

from analyzers.rules import family_getattr

__getattr__ = family_getattr(__name__, __path__)
