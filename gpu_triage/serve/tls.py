"""A self-signed TLS certificate for 127.0.0.1, made in memory for one ``serve`` run.

kubectl sends a bearer token only over TLS (client-go reads a kubeconfig's credentials
only when the transport is secure), so the server speaks HTTPS. Python's :mod:`ssl`
can serve a certificate but not make one, and the project takes on no cryptography
package: this module writes the X.509 v3 certificate (RFC 5280) in DER itself, signed
with a fresh 2048-bit RSA key (PKCS #1 v1.5, SHA-256). The certificate is its own
authority: the kubeconfig carries it as ``certificate-authority-data``, so clients
trust this one server and nothing else, and the key never leaves the process (it is
written, 0600, into a private directory only for as long as :mod:`ssl` takes to load it).
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

_E = 65537
_BITS = 2048
_ROUNDS = 40  # Miller-Rabin rounds: error below 4**-40
_SMALL_PRIMES = [p for p in range(3, 2000, 2) if all(p % d for d in range(3, int(p ** .5) + 1, 2))]
# DER DigestInfo prefix of SHA-256 (RFC 8017, section 9.2, note 1)
_SHA256_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
_SHA256_RSA = "1.2.840.113549.1.1.11"
_RSA = "1.2.840.113549.1.1.1"


@dataclass(frozen=True)
class Certificate:
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        """A TLS server context holding this certificate and key (TLS 1.2 at least)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="gpu-triage-serve-") as private:
            cert, key = Path(private, "cert.pem"), Path(private, "key.pem")
            for path, data in ((cert, self.cert_pem), (key, self.key_pem)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
            context.load_cert_chain(cert, key)
        return context


def self_signed(now: datetime | None = None, days: int = 30) -> Certificate:
    """A new key and a certificate for IP 127.0.0.1 and DNS localhost, valid from an
    hour ago (clock skew) for ``days`` days."""
    p, q = _prime(_BITS // 2), _prime(_BITS // 2)
    while q == p:
        q = _prime(_BITS // 2)
    n, phi = p * q, (p - 1) * (q - 1)
    d = pow(_E, -1, phi)
    now = now or datetime.now(UTC)
    name = _seq(_set(_seq(_oid("2.5.4.3"), _tlv(0x0C, b"gpu-triage serve"))))
    public = _seq(_seq(_oid(_RSA), _NULL), _bits(_seq(_int(n), _int(_E))))
    extensions = _tlv(0xA3, _seq(
        _ext("2.5.29.19", _seq(_tlv(0x01, b"\xff")), critical=True),  # CA: its own root
        _ext("2.5.29.15", _tlv(0x03, b"\x02\xa4"), critical=True),  # sign, encipher, certs
        _ext("2.5.29.17", _seq(_tlv(0x87, bytes([127, 0, 0, 1])), _tlv(0x82, b"localhost"))),
    ))
    algorithm = _seq(_oid(_SHA256_RSA), _NULL)
    tbs = _seq(_tlv(0xA0, _int(2)), _int(secrets.randbits(127) | 1), algorithm, name,
               _seq(_time(now - timedelta(hours=1)), _time(now + timedelta(days=days))),
               name, public, extensions)
    certificate = _seq(tbs, algorithm, _bits(_sign(tbs, n, d)))
    key = _seq(_int(0), _int(n), _int(_E), _int(d), _int(p), _int(q), _int(d % (p - 1)),
               _int(d % (q - 1)), _int(pow(q, -1, p)))
    return Certificate(_pem("CERTIFICATE", certificate), _pem("RSA PRIVATE KEY", key))


def _sign(message: bytes, n: int, d: int) -> bytes:
    size = (n.bit_length() + 7) // 8
    info = _SHA256_INFO + hashlib.sha256(message).digest()
    encoded = b"\x00\x01" + b"\xff" * (size - len(info) - 3) + b"\x00" + info
    return pow(int.from_bytes(encoded, "big"), d, n).to_bytes(size, "big")


def _prime(bits: int) -> int:
    while True:
        candidate = secrets.randbits(bits) | (0b11 << (bits - 2)) | 1
        if candidate % _E == 1 or any(candidate % p == 0 for p in _SMALL_PRIMES):
            continue
        if _probably_prime(candidate):
            return candidate


def _probably_prime(n: int) -> bool:
    s, d = 0, n - 1
    while d % 2 == 0:
        s, d = s + 1, d // 2
    for _ in range(_ROUNDS):
        x = pow(secrets.randbelow(n - 3) + 2, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


# -- DER (ITU-T X.690), the few types a certificate needs ----------------------------------

def _tlv(tag: int, value: bytes) -> bytes:
    length = len(value)
    if length < 0x80:
        return bytes([tag, length]) + value
    raw = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(raw)]) + raw + value


def _seq(*parts: bytes) -> bytes:
    return _tlv(0x30, b"".join(parts))


def _set(*parts: bytes) -> bytes:
    return _tlv(0x31, b"".join(parts))


def _int(value: int) -> bytes:
    return _tlv(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big"))


def _bits(value: bytes) -> bytes:
    return _tlv(0x03, b"\x00" + value)


def _oid(dotted: str) -> bytes:
    first, second, *rest = (int(part) for part in dotted.split("."))
    body = bytearray([40 * first + second])
    for arc in rest:
        chunk = [arc & 0x7F]
        while arc > 0x7F:
            arc >>= 7
            chunk.append(0x80 | (arc & 0x7F))
        body.extend(reversed(chunk))
    return _tlv(0x06, bytes(body))


def _time(when: datetime) -> bytes:
    return _tlv(0x17, when.astimezone(UTC).strftime("%y%m%d%H%M%SZ").encode())  # UTCTime


def _ext(oid: str, value: bytes, *, critical: bool = False) -> bytes:
    return _seq(_oid(oid), *([_tlv(0x01, b"\xff")] if critical else []), _tlv(0x04, value))


_NULL = b"\x05\x00"


def _pem(label: str, der: bytes) -> bytes:
    text = base64.b64encode(der).decode()
    lines = [text[i:i + 64] for i in range(0, len(text), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----", ""]).encode()
