"""``gpu-triage serve``: a bundle as a read-only Kubernetes API for kubectl, in the
foreground until Ctrl-C or SIGTERM (:mod:`gpu_triage.serve`)."""

from __future__ import annotations

import shlex
import signal
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from gpu_triage.cli_common import Failure, shown, stderr, unreadable
from gpu_triage.exitcodes import Exit

if TYPE_CHECKING:
    from gpu_triage.serve.session import Session


@click.command()
@click.argument("bundle_path", metavar="BUNDLE", type=click.Path(path_type=Path))
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one).")
@click.option("--kubeconfig", "kubeconfig_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the kubeconfig to this new file (default: in a private "
                   "temporary directory). It is written 0600 and removed when the server "
                   "stops; an existing file is refused.")
def serve(bundle_path: Path, port: int, kubeconfig_path: Path | None) -> None:
    """Serve BUNDLE as a read-only Kubernetes API on 127.0.0.1 for kubectl.

    BUNDLE is what `analyze` reads (gpu-triage, must-gather or troubleshoot; a
    directory, .tgz or .tar), under the same caps. Runs until Ctrl-C or SIGTERM. Only
    get and list are served (nodes, namespaces, pods and their logs, events,
    configmaps, resourcequotas, daemonsets, deployments, runtimeclasses, CRDs,
    clusterpolicies, nvidiadrivers); node files under /gpu-triage/v1/nodes/ for
    `kubectl get --raw`. Every write, exec, attach, port-forward and proxy is refused.
    """
    from bundle import BundleError, open_bundle
    from gpu_triage.serve.session import Session

    try:
        opened = open_bundle(bundle_path)
    except BundleError as exc:
        raise unreadable(exc) from None
    private = None
    try:
        try:
            session = Session(opened, port)
        except OSError as exc:
            raise Failure(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}", Exit.USAGE) \
                from None
        if kubeconfig_path is None:
            private = tempfile.TemporaryDirectory(prefix="gpu-triage-serve-")
            kubeconfig_path = Path(private.name) / "kubeconfig"
        try:
            session.write_kubeconfig(kubeconfig_path)
        except OSError as exc:
            session.stop()
            why = "it exists (serve writes a new file and removes it when it stops)" \
                if isinstance(exc, FileExistsError) else exc.strerror
            raise Failure(f"cannot write {shown(kubeconfig_path)}: {why}", Exit.USAGE) \
                from None
        _run(session, bundle_path, kubeconfig_path)
    finally:
        opened.close()
        if private is not None:
            private.cleanup()


def _run(session: Session, bundle_path: Path, kubeconfig: Path) -> None:
    stop = threading.Event()

    def on_signal(number: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    session.start()
    quoted = shlex.quote(str(kubeconfig.absolute()))
    click.echo(f"Serving {shown(bundle_path)} read-only at {session.url}\n"
               f"export KUBECONFIG={quoted}\n"
               "kubectl get pods -A        # then: kubectl describe, kubectl logs, "
               "kubectl get --raw /gpu-triage/v1/nodes\n"
               "Ctrl-C stops the server and removes the kubeconfig.", nl=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        session.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stderr("gpu-triage serve: stopped")
