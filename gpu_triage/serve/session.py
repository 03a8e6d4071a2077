"""One ``serve`` session: the server over an opened bundle, its token and certificate,
and the kubeconfig that hands both to kubectl.

The kubeconfig is written ``0600`` into a new file (an existing file or link is
refused) and removed when the session ends. The token is 256 random bits; the
certificate is made for this session alone (:mod:`gpu_triage.serve.tls`).
"""

from __future__ import annotations

import base64
import os
import secrets
import threading
from pathlib import Path

import yaml

from bundle import Bundle
from gpu_triage.serve.api import Api
from gpu_triage.serve.server import HOST, Server
from gpu_triage.serve.store import Store
from gpu_triage.serve.tls import self_signed

CONTEXT = "gpu-triage"


class Session:
    def __init__(self, bundle: Bundle, port: int = 0) -> None:
        self.token = secrets.token_urlsafe(32)
        self._certificate = self_signed()
        self.server = Server(Api(Store(bundle)), self.token,
                             self._certificate.server_context(), port)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                        name="gpu-triage-serve")
        self._written: list[Path] = []

    @property
    def url(self) -> str:
        return f"https://{HOST}:{self.server.port}"

    @property
    def ca_pem(self) -> bytes:
        return self._certificate.cert_pem

    def kubeconfig(self, token: str | None = None) -> str:
        """The kubeconfig, in the YAML kubectl reads (``token``: another, for tests)."""
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": CONTEXT,
            "clusters": [{"name": CONTEXT, "cluster": {
                "server": self.url,
                "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
            "users": [{"name": CONTEXT, "user": {"token": token or self.token}}],
            "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT,
                                                       "namespace": "default"}}],
            "preferences": {}}, sort_keys=False)

    def write_kubeconfig(self, path: Path) -> Path:
        """Write the kubeconfig to a new file ``path``, 0600. An existing file or link
        there is refused (FileExistsError): the file is removed when the session ends,
        so it must be this session's own."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, self.kubeconfig().encode())
        finally:
            os.close(fd)
        self._written.append(path)
        return path

    def start(self) -> Session:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()
        for path in self._written:
            path.unlink(missing_ok=True)
        self._written.clear()

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
