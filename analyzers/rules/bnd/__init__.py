"""BND: the bundle itself — what was not collected, and what could not be read.

Each rule lives alone in ``BND<nnn>.py``; ``_*.py`` modules are the family's private
helpers. ``RULES`` (the ``gpu_triage.rules`` entry point) is found from the files, in ID
order.
"""

from analyzers.rules import family_getattr

__getattr__ = family_getattr(__name__, __path__)
