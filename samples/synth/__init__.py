"""Synthetic support bundles at scale, for the benchmark and the scale test.

    .venv/bin/python -m samples.synth --size L -o /tmp/L.tgz      # 2,000 nodes
    .venv/bin/python -m samples.synth --size S -o /tmp/S.tgz --seed 7

A generated bundle is a format-v1 ``.tgz`` (``docs/bundle-format.md``) of one
cluster of 8-GPU H100 nodes running the GPU Operator with the toolkit disabled (the
hosts carry their own ``nvidia`` runtime drop-in), and a fixed mix of failures planted
on known nodes. Beside the archive the generator writes ``<output stem>.planted.json``:
which node got which failure and the finding ids the analyzer must report for it.

Layers:

- ``plan``: sizes, node roles (which failure sits where), and the planted manifest.
- ``configs``: containerd configuration variants; their ``config dump`` is produced
  once per variant by the installed containerd and cached.
- ``cluster``: the Kubernetes objects (``cluster/*.json``), one item at a time.
- ``nodefiles``: the files of ``nodes/<name>/`` (journals, dmesg, nvidia-smi XML ...).
- ``oplogs``: container logs of the operator's pods (``logs/``).
- ``spool``: the writer; members are streamed to a spool file, then into the tar.

Everything is a function of (size, seed): same arguments, same bytes. No wall clock,
no global random state; gzip and tar headers carry fixed times.
"""
