"""Builders for the synthetic support bundles under ``samples/``.

Layers, bottom up:

- ``core``: deterministic ids and clocks, output formatting, the ``Bundle``
  writer (files plus one ``manifest.json`` item per collection step).
- ``model``: plain descriptions of machines (``Host``, ``Gpu``).
- ``k8s``: Kubernetes objects shaped like API server output.
- ``scene``: a ``Scene`` gathers what one bundle shows; ``write_scene`` emits
  every path of bundle-format.md in collection order.
- ``workloads``: pods placed by outcome (stuck without sandbox, ran,
  succeeded), DaemonSets and Deployments derived from templates; each placed
  pod leaves its status, events, logs and sandbox attempts in the scene.
- ``kubeadm``, ``gpuop``, ``oplogs``: the kubeadm/flannel baseline, the GPU
  Operator v26.3.3 stack, and its components' log lines.
- ``containerd``: config files, the toolkit's drop-in, real ``config dump``.
- ``journal``, ``smi``, ``host``: per-node journals, ``nvidia-smi -q -x``,
  and the other node paths (``host.write_node`` writes them all).
- ``lab``: the five-node lab of the second write-up, shared by its scenarios.
- ``dcgpu``, ``fleet``: data-center cards (multi-GPU ``nvidia-smi``, MIG, Xid lines)
  and small fleets with the operator installed long before collection, shared by
  the runtime and scheduling scenarios (``scenarios_runtime.py``, ``scenarios_numbers.py``).
- ``hgx``, ``podstates``: HGX boards and nvidia-smi health readings (ECC, row
  remapping, reset, NVLink fabric); pods caught part-way (an init container still
  running, crash loops, image pull back-off) and nodes that rebooted, for the node and
  driver scenarios (``scenarios_node.py``).
- ``distro``: GPU nodes of k3s, RKE2, k0s, MicroK8s and OpenShift (CRI-O), written as
  the 1.1 node collector writes them (``runtime.json``, the distribution's containerd
  file, templates and log, or CRI-O's configuration; units with ``LoadState``), for the
  issue 14 scenarios (``scenarios_distro.py``).

Stdlib only; no wall clock, no random state.
"""
