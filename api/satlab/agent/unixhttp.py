"""HTTP/1.1 over a Unix stream socket, server and client, with the standard library only.

A Unix socket path is visible from every network namespace, so the orchestrator reaches agents in
namespaces without any address; a physical host's agent is reached over TCP with mutual TLS and the
same protocol (satlab.agent.tlshttp), through the same `request`.
"""

from __future__ import annotations

import http.client
import json
import socket
import socketserver
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from satlab.agent.tlshttp import TlsHTTPConnection, TlsTarget


class UnixHTTPServer(socketserver.ThreadingMixIn, HTTPServer):
    address_family = socket.AF_UNIX
    daemon_threads = True

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "agent", 0


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def address_string(self) -> str:  # Unix peers have no address
        return "unix"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the orchestrator logs
        pass

    def read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("agent", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


class AgentError(RuntimeError):
    """An agent answered with an error, or could not be reached."""


class AgentTimeout(AgentError):
    """An agent did not answer in time: it hangs (stopped, or stuck). Its socket still accepts
    connections (the kernel queues them), so only the time limit ends the wait."""


def request(
    path: str | TlsTarget, method: str, url: str, body: Any = None, timeout: float = 10.0
) -> Any:
    """One request to an agent: on its Unix socket `path`, or a TLS endpoint of a physical box."""
    conn: http.client.HTTPConnection
    if isinstance(path, TlsTarget):
        conn = TlsHTTPConnection(path, timeout)
    else:
        conn = UnixHTTPConnection(path, timeout)
    try:
        payload = None if body is None else json.dumps(body)
        headers = {"Content-Type": "application/json"} if payload else {}
        conn.request(method, url, body=payload, headers=headers)
        resp = conn.getresponse()
        data = json.loads(resp.read() or b"null")
    except TimeoutError as exc:  # say which limit ran out, not just "timed out"
        raise AgentTimeout(
            f"agent at {path}: {method} {url}: no answer within {timeout:g} s"
        ) from exc
    except (OSError, http.client.HTTPException, json.JSONDecodeError) as exc:
        raise AgentError(f"agent at {path}: {method} {url}: {exc}") from exc
    finally:
        conn.close()
    if resp.status >= 400:
        raise AgentError(
            f"agent at {path}: {method} {url}: {resp.status} {data.get('error', data)}"
        )
    return data
