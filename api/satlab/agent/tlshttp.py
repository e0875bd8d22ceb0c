"""The agent's protocol over TCP with mutual TLS: the listener of an agent on a physical box, and
the controller's connection to it (satlab.testbed.hardware).

Both sides present a certificate signed by the project CA (satlab.agent.tlsca) and require the
other's (ssl.CERT_REQUIRED both ways); the controller also checks that the agent's certificate
names the box it meant to reach (its registered name), so a box answering at another's address is
refused. There is no plaintext TCP mode: a Unix socket (satlab.agent.unixhttp) is the only other
transport, and it never leaves the machine.
"""

from __future__ import annotations

import http.client
import socket
import socketserver
import ssl
from dataclasses import dataclass
from http.server import HTTPServer
from pathlib import Path


def server_context(cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    """An agent's: its own certificate, and only clients with a CA-signed controller certificate
    (OpenSSL checks the clientAuth usage that `satlab ca issue --role controller` sets)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(cafile=ca)
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_context(cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    """A controller's: its certificate, and agents' checked against the CA and their name."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED and check_hostname on
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(cafile=ca)
    return ctx


class TlsHTTPServer(socketserver.ThreadingMixIn, HTTPServer):
    """The agent's HTTP server on ADDR:PORT; every connection is TLS from its first byte (the
    handshake runs in the connection's own thread, so a slow or hostile peer holds only that)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, ctx: ssl.SSLContext) -> None:
        self.ctx = ctx
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, object]:
        sock, addr = self.socket.accept()
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        assert isinstance(request, ssl.SSLSocket)
        request.settimeout(10)  # a handshake that never comes ends, not holds a thread
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError):
            return  # refused: no certificate, or one the CA did not sign
        request.settimeout(None)
        super().finish_request(request, client_address)


@dataclass(frozen=True)
class TlsTarget:
    """Where a controller reaches one agent: the box's registered name (its certificate's) and
    address."""

    name: str
    host: str
    port: int
    ctx: ssl.SSLContext

    def __str__(self) -> str:
        return f"{self.name} ({self.host}:{self.port})"


class TlsHTTPConnection(http.client.HTTPConnection):
    def __init__(self, target: TlsTarget, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.target = target

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        try:
            self.sock = self.target.ctx.wrap_socket(sock, server_hostname=self.target.name)
        except BaseException:
            sock.close()
            raise
