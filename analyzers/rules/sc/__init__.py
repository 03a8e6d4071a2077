"""SC: the number gate — scheduling and admission of GPU pods.

Each rule lives alone in ``SC<nnn>.py``; ``_*.py`` modules are the family's private
helpers. ``RULES`` (the ``gpu_triage.rules`` entry point) is found from the files, in ID
order.
"""

from analyzers.rules import family_getattr

__getattr__ = family_getattr(__name__, __path__)
