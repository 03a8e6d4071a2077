"""Reading gpu-triage support bundles safely: archive access, typed views, parsers.

Nothing in this package raises on bad content: unreadable files become recorded
:class:`Problem` entries. Only a bundle that cannot be opened at all raises
:class:`BundleError`.
"""

from bundle.container import Limits
from bundle.problems import BundleError, Problem
from bundle.reader import Bundle, NodeArtifacts, open_bundle

__all__ = ["Bundle", "BundleError", "Limits", "NodeArtifacts", "Problem", "open_bundle"]
