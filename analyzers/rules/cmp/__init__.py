"""CMP: the components of the GPU stack — why one is not running, from the Kubernetes
record and the component's own words (its first error).

For every workload of the stack (``facts.inventory``: the operator's operands, a
standalone or managed device plugin, dcgm-exporter, NFD, GFD, MIG manager, MOFED, the
DRA driver), what Kubernetes itself says stops it: a DaemonSet that places no pod, pods
refused at creation, unscheduled, unable to pull or start, crashing, killed for memory or
evicted (CMP001-CMP010, one finding per workload and cause, its nodes grouped), and the
driver container's first failing build step (CMP020).

Each rule lives alone in ``CMP<nnn>.py``; ``_*.py`` modules are the family's private
helpers. ``RULES`` (the ``gpu_triage.rules`` entry point) is found from the files, in ID
order.
"""

from analyzers.rules import family_getattr

__getattr__ = family_getattr(__name__, __path__)
