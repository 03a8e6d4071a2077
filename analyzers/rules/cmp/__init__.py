"""CMP: the components of the GPU stack — why one is not running, from the Kubernetes
record and the component's own words (its first error).

Each rule lives alone in ``CMP<nnn>.py``; ``_*.py`` modules are the family's private
helpers. ``RULES`` (the ``gpu_triage.rules`` entry point) is found from the files, in ID
order.
"""

from analyzers.rules import family_getattr

__getattr__ = family_getattr(__name__, __path__)
