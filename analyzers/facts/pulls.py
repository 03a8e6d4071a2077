"""Why an image cannot be pulled, from the kubelet's ``Failed to pull image`` message.

Wordings of the container runtimes, from public threads:

- not found: containerd ``code = NotFound desc = failed to pull and unpack image ...
  failed to resolve reference "<image>": <image>: not found``
  (https://github.com/NVIDIA/gpu-operator/issues/273); Docker ``manifest for <image> not
  found: manifest unknown: manifest unknown`` (https://github.com/NVIDIA/gpu-operator/issues/170)
- unauthorized: ``unexpected status from HEAD request to https://nvcr.io/v2/...: 401
  Unauthorized`` (https://github.com/Mellanox/network-operator/issues/1052); Docker
  ``pull access denied for <repo>, repository does not exist or may require 'docker
  login'`` and ``unauthorized: authentication required``
  (https://github.com/octarinesec/octarine-operator/issues/15)
- rate limit: ``429 Too Many Requests - Server message: toomanyrequests: You have reached
  your pull rate limit`` (https://github.com/kata-containers/kata-containers/issues/10109)
- network: ``dial tcp <ip>:443: i/o timeout``, ``no such host``, ``connection refused``,
  TLS and proxy failures (e.g. https://github.com/NVIDIA/gpu-operator/issues/332 , an
  air-gapped node that cannot reach nvcr.io)
"""

from __future__ import annotations

import re

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("rate limit", re.compile(r"toomanyrequests|429 Too Many Requests|pull rate limit", re.I)),
    ("unauthorized", re.compile(
        r"401 Unauthorized|unauthorized: |authentication required|pull access denied|"
        r"denied: requested access|403 Forbidden|no basic auth credentials", re.I)),
    ("not found", re.compile(
        r"manifest unknown|code = NotFound|: not found\b|not found: manifest|"
        r"repository does not exist|InvalidImageName|invalid reference format", re.I)),
    ("network", re.compile(
        r"i/o timeout|no such host|connection refused|connection reset|"
        r"TLS handshake timeout|x509: |network is unreachable|dial tcp|proxyconnect|"
        r"context deadline exceeded|EOF\b", re.I)),
)

ADVICE = {
    "not found": "the tag or repository does not exist in the registry: correct the image "
                 "name or version",
    "unauthorized": "the registry refuses the node's credentials: add or fix the "
                    "imagePullSecret (or the node's registry login)",
    "rate limit": "the registry rate-limits anonymous pulls: authenticate, or mirror the "
                  "image",
    "network": "the node cannot reach the registry: check its DNS, proxy, firewall or "
               "the mirror it should use",
    "unknown": "read the kubelet's pull error on the node",
}


def classify(message: str) -> str:
    """``not found`` | ``unauthorized`` | ``rate limit`` | ``network`` | ``unknown``."""
    for kind, pattern in _KINDS:
        if pattern.search(message):
            return kind
    return "unknown"
