"""A TLS gateway on 127.0.0.1 in front of a plain-HTTP frontend, for -H / --cacert / --insecure.

It presents a self-signed certificate made here (``cryptography``), refuses requests without the
expected token header (401), and forwards everything else to the upstream unchanged: method,
path, body, status, headers (hop-by-hop ones aside) and body bytes.

``stalling_head_frontend`` is the other stand-in: it answers GET with the reference fleet's
listing and holds every HEAD until released, so a conformance run can be interrupted mid-way.
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests._client_support import QuietHandler, serving

TOKEN_HEADER = "X-Gateway-Token"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}


def self_signed_cert(directory: Path, *, expired: bool = False) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its own CA) and its key, as PEM files in ``directory``
    (``expired``: its validity ended yesterday)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "prime-rl-dynamo test gateway")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=3 if expired else 0, minutes=5))
        .not_valid_after(now + datetime.timedelta(days=-1 if expired else 1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "gateway.pem", directory / "gateway.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@dataclass
class Gateway:
    url: str  # https://127.0.0.1:PORT
    cacert: Path
    token: str
    seen_tokens: list[str]  # what each request carried in the token header ("" when absent)


@contextmanager
def tls_gateway(upstream: str, token: str, directory: Path) -> Iterator[Gateway]:
    """Serve https://127.0.0.1:PORT forwarding to ``upstream`` for requests bearing ``token``."""
    cert, key = self_signed_cert(directory)
    target = urlsplit(upstream)
    seen: list[str] = []

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            given = self.headers.get(TOKEN_HEADER, "")
            seen.append(given)
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else None
            if given != token:
                # Like some gateways, it quotes what it was given: a client must not repeat it.
                reply = json.dumps({"error": "unauthorized", "token": given}).encode()
                self.answer(503 if given else 401, reply)  # 503: retried, so shown while waiting
                return
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            try:
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in _HOP_BY_HOP and k.lower() != TOKEN_HEADER.lower()
                }
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                content = response.read()
                self.send_response(response.status)
                for k, v in response.getheaders():
                    if k.lower() not in _HOP_BY_HOP | {"content-length", "server", "date"}:
                        self.send_header(k, v)
                # HEAD: the upstream's Content-Length of the GET, no body (HTTP-2).
                length_header = (
                    response.getheader("content-length") if self.command == "HEAD" else None
                )
                self.send_header("content-length", length_header or str(len(content)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(content)
            finally:
                conn.close()

        do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _forward

    with serving(Handler, (cert, key), handshake_in_request=True) as url:
        yield Gateway(url, cert, token, seen)


@dataclass
class StallingFrontend:
    url: str  # http://127.0.0.1:PORT
    head_seen: threading.Event  # set once a HEAD arrived (the run reached HTTP-2)
    release: threading.Event  # lets the held HEAD requests end


@contextmanager
def stalling_head_frontend() -> Iterator[StallingFrontend]:
    """Serve the reference fleet's GET /v1/rl/workers body on every GET; hold HEAD (HTTP-2)."""
    import httpx

    from prime_rl_dynamo.suite.reference import start_reference_fleet

    with start_reference_fleet() as fleet:
        listing = httpx.get(fleet.frontend_url + "/v1/rl/workers", timeout=10).content
    head_seen, release = threading.Event(), threading.Event()

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.answer(200, listing)

        def do_HEAD(self) -> None:  # HTTP-2 hangs here until the run is interrupted
            head_seen.set()
            release.wait(30)

    with serving(Handler) as url:
        try:
            yield StallingFrontend(url, head_seen, release)
        finally:
            release.set()  # before the server waits for its held HEAD requests
