"""The HTTPS server: loopback only, a bearer token on every request, bounded requests.

Built on :class:`http.server.ThreadingHTTPServer`. Each connection is a thread, at
most :data:`MAX_CONNECTIONS` at a time (the rest are closed at once); a connection
serves at most :data:`REQUESTS_PER_CONNECTION` requests, then is closed (clients open
another); a request target over :data:`MAX_TARGET` bytes or more than
:data:`MAX_HEADERS` header lines are refused before any work, a body over
:data:`MAX_BODY` is not read (the connection closes after the answer), and a client
silent for :data:`IDLE_SECONDS` is dropped. A body is read only to be
dropped, except the question of a ``SelfSubjectAccessReview`` (:mod:`.access`). The
token is compared in constant time; without it every path, discovery included, answers
401.
"""

from __future__ import annotations

import hmac
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gpu_triage.serve.api import Api, Response, status

HOST = "127.0.0.1"
MAX_CONNECTIONS = 64
REQUESTS_PER_CONNECTION = 1000
MAX_TARGET = 8192
MAX_HEADERS = 64
MAX_BODY = 1 << 20  # a refused write's body is read (to keep the connection) up to this
IDLE_SECONDS = 30


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 16

    def __init__(self, api: Api, token: str, tls: ssl.SSLContext, port: int = 0) -> None:
        self.api = api
        self.token = token
        self.tls = tls
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__((HOST, port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            wrapped = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            self.shutdown_request(request)
            self._slots.release()
            return
        try:
            super().process_request_thread(wrapped, client_address)
        finally:
            self._slots.release()

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        connection.settimeout(IDLE_SECONDS)  # also bounds the TLS handshake
        return connection, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-answer; nothing to report


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server
    server_version = "gpu-triage-serve"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self._served = 0

    def parse_request(self) -> bool:
        if not super().parse_request():  # the standard library's caps: 64 KiB, 100 headers
            return False
        if len(self.path) > MAX_TARGET:
            self._send(status(414, "RequestURITooLong", f"request target over {MAX_TARGET} "
                              "bytes"), close=True)
            return False
        if len(self.headers) > MAX_HEADERS:
            self._send(status(431, "RequestHeaderFieldsTooLarge", f"over {MAX_HEADERS} header "
                              "lines"), close=True)
            return False
        return True

    def _serve(self) -> None:
        self._served += 1
        close = self._served >= REQUESTS_PER_CONNECTION
        length = self.headers.get("Content-Length") or "0"
        body = b""
        if not length.isdigit() or int(length) > MAX_BODY or self.headers.get(
                "Transfer-Encoding"):
            close = True  # a body we will not read: answer, then hang up
        elif int(length):
            body = self.rfile.read(int(length))
        auth = self.headers.get("Authorization") or ""
        expected = f"Bearer {self.server.token}"
        if not hmac.compare_digest(auth.encode("utf-8", "replace"), expected.encode()):
            self._send(status(401, "Unauthorized", "Unauthorized"), close=close)
            return
        accept = self.headers.get("Accept") or ""
        try:
            response = self.server.api.answer(self.command, self.path, accept, body)
        except Exception as exc:  # noqa: BLE001 - a bug must not drop the connection unanswered
            response = status(500, "InternalError", f"gpu-triage serve could not answer: "
                              f"{type(exc).__name__}")
        self._send(response, close=close)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

    def _send(self, response: Response, *, close: bool) -> None:
        self.send_response(response.code)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        if response.warning:  # RFC 7234 warn-code 299, as the API server sends its warnings
            quoted = response.warning.replace("\\", "\\\\").replace('"', '\\"')
            self.send_header("Warning", f'299 - "{quoted}"')
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


__all__ = ["HOST", "Server", "status"]
