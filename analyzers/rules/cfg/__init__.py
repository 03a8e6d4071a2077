"""CFG: versions, support and configuration of the GPU Operator.

Each rule lives alone in ``CFG<nnn>.py``; ``_*.py`` modules are the family's private
helpers. ``RULES`` (the ``gpu_triage.rules`` entry point) is found from the files, in ID
order.
"""

from analyzers.rules import family_getattr

__getattr__ = family_getattr(__name__, __path__)
