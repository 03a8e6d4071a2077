"""``gpu-triage serve``: a read-only Kubernetes API server over one bundle, on 127.0.0.1,
so kubectl (and other clients) can look around the cluster as it was collected.

:mod:`~gpu_triage.serve.session` ties the parts together: the bundle read through
:mod:`bundle` (:mod:`~gpu_triage.serve.store`), the answers
(:mod:`~gpu_triage.serve.api`: discovery, lists and objects with selectors and
server-side tables, pod logs, node files), the HTTPS server with its token and request
caps (:mod:`~gpu_triage.serve.server`, :mod:`~gpu_triage.serve.tls`).
"""
