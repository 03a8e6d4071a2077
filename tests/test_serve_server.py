"""The ``serve`` server itself: loopback only, the token on every request, bounded
requests and connections, the kubeconfig it writes, and the command's clean exit on
SIGTERM and Ctrl-C (SIGINT)."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import serve_kit
import yaml
from serve_kit import Client

from bundle import open_bundle
from gpu_triage.serve import server as server_module
from gpu_triage.serve.session import Session

SAMPLE = serve_kit.SAMPLE


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    with open_bundle(SAMPLE) as opened, Session(opened) as running:
        yield running


def test_binds_loopback_only(session: Session) -> None:
    assert session.server.server_address[0] == "127.0.0.1"
    assert session.url == f"https://127.0.0.1:{session.server.port}"
    listening = (Path("/proc/net/tcp").read_text().splitlines() if Path("/proc/net/tcp").exists()
                 else [])
    ours = [line.split()[1] for line in listening[1:] if line.split()[3] == "0A"
            and int(line.split()[1].split(":")[1], 16) == session.server.port]
    if listening:
        assert ours == [f"0100007F:{session.server.port:04X}"]
    outward = _outward_address()
    if outward is None:
        pytest.skip("this machine has no address but loopback to try the port on")
    with pytest.raises(OSError), socket.create_connection((outward, session.server.port), 2):
        pass


def _outward_address() -> str | None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent by a UDP connect
        address = str(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


@pytest.mark.parametrize("token", [None, "wrong", ""])
def test_every_path_needs_the_token(session: Session, token: str | None) -> None:
    client = Client(session.url, session.ca_pem, token)
    for path in ("/api", "/apis", "/version", "/api/v1/pods", "/gpu-triage/v1/nodes"):
        code, _, body = client.request("GET", path)
        assert code == 401 and b'"reason":"Unauthorized"' in body, path
    good = Client(session.url, session.ca_pem, session.token)
    assert good.request("GET", "/api/v1/pods")[0] == 200


def test_the_certificate_is_the_sessions_own(session: Session) -> None:
    stranger = ssl.create_default_context()  # the system's roots: this server is not in them
    host, port = "127.0.0.1", session.server.port
    with socket.create_connection((host, port), 5) as raw, pytest.raises(ssl.SSLError):
        stranger.wrap_socket(raw, server_hostname=host)
    cert = ssl.create_default_context(cadata=session.ca_pem.decode())
    with socket.create_connection((host, port), 5) as raw, \
            cert.wrap_socket(raw, server_hostname=host) as tls:
        assert tls.version() in ("TLSv1.2", "TLSv1.3")


def test_requests_per_connection_are_budgeted(session: Session,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Five requests sent at once on one connection: three answers, then the server hangs
    up (the last answer says so); the client has to open another connection."""
    monkeypatch.setattr(server_module, "REQUESTS_PER_CONNECTION", 3)
    context = ssl.create_default_context(cadata=session.ca_pem.decode())
    request = (f"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
               f"{session.token}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", session.server.port), 5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(request * 5)
        received = b""
        while chunk := tls.recv(65536):
            received += chunk
    assert received.count(b"HTTP/1.1 200 OK") == 3
    assert received.count(b"Connection: close") == 1
    assert received.rindex(b"Connection: close") > received.rindex(b"HTTP/1.1 200 OK")


def test_oversized_requests_are_refused(session: Session) -> None:
    client = Client(session.url, session.ca_pem, session.token)
    code, _, _ = client.request("GET", "/api/v1/pods?labelSelector=" + "a" * 9000)
    assert code == 414
    many = {f"X-Filler-{n}": "x" for n in range(70)}
    assert client.request("GET", "/version", headers=many)[0] == 431
    code, _, _ = client.request("GET", "/version", headers={"Content-Length": str(1 << 30)})
    assert code == 200  # answered without reading the promised gigabyte, then closed


def test_connections_are_capped(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    held = [socket.create_connection(("127.0.0.1", session.server.port), 5)
            for _ in range(server_module.MAX_CONNECTIONS)]
    try:
        time.sleep(0.3)
        extra = socket.create_connection(("127.0.0.1", session.server.port), 5)
        extra.settimeout(5)
        assert extra.recv(1) == b""  # closed at once, before any TLS
        extra.close()
    finally:
        for connection in held:
            connection.close()
    time.sleep(0.3)
    client = Client(session.url, session.ca_pem, session.token)
    assert client.request("GET", "/version")[0] == 200  # slots come back


def test_kubeconfig_is_private_and_names_this_server(session: Session, tmp_path: Path) -> None:
    path = session.write_kubeconfig(tmp_path / "config")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config = yaml.safe_load(path.read_text())
    assert config["clusters"][0]["cluster"]["server"] == session.url
    assert config["users"][0]["user"] == {"token": session.token}
    assert len(session.token) >= 40
    target = tmp_path / "elsewhere"
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(FileExistsError):
        session.write_kubeconfig(tmp_path / "link")
    assert not target.exists()
    mine = tmp_path / "my-kubeconfig"
    mine.write_text("the user's own\n")
    with pytest.raises(FileExistsError):
        session.write_kubeconfig(mine)
    assert mine.read_text() == "the user's own\n"


def test_the_command_refuses_an_existing_kubeconfig(tmp_path: Path) -> None:
    mine = tmp_path / "config"
    mine.write_text("the user's own\n")
    result = subprocess.run([sys.executable, "-m", "gpu_triage", "serve", str(SAMPLE),
                             "--kubeconfig", str(mine)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2
    assert f"cannot write {mine}: it exists" in result.stderr
    assert mine.read_text() == "the user's own\n"


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], str, Path]:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen([sys.executable, "-m", "gpu_triage", "serve", str(SAMPLE),
                                "--kubeconfig", str(kubeconfig), *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    first = process.stdout.readline()
    export = process.stdout.readline()
    assert first.startswith(f"Serving {SAMPLE} read-only at https://127.0.0.1:"), first
    assert export == f"export KUBECONFIG={kubeconfig}\n"
    return process, first.rsplit(" ", 1)[1].strip(), kubeconfig


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT])
def test_the_command_stops_cleanly(tmp_path: Path, sent: signal.Signals) -> None:
    process, url, kubeconfig = _start(tmp_path)
    try:
        assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == url
        process.send_signal(sent)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    assert err.strip() == "gpu-triage serve: stopped"
    assert not kubeconfig.exists()
    port = int(url.rsplit(":", 1)[1])
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), 2):
        pass


def test_the_command_names_a_bundle_it_cannot_read(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "gpu_triage", "serve",
                             str(tmp_path / "missing.tgz")], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "NO_COLOR": "1"})
    assert result.returncode == 3
    assert "cannot read bundle" in result.stderr and "missing.tgz" in result.stderr


def test_a_failure_inside_is_a_500_status(session: Session,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(method: str, target: str, accept: str, body: bytes = b"") -> None:
        raise KeyError("secret detail")

    monkeypatch.setattr(session.server.api, "answer", broken)
    client = Client(session.url, session.ca_pem, session.token)
    code, _, body = client.request("GET", "/api/v1/pods")
    assert code == 500
    assert b"gpu-triage serve could not answer: KeyError" in body
    assert b"secret detail" not in body
