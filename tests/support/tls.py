"""Test TLS: a throwaway CA, server certificates for 127.0.0.1/localhost, and a loopback
HTTPS monitor that records POSTs and answers with scripted statuses.

Certificates are made with the `openssl` command line (no third-party package needed); the
extensions are the ones a strict verifier (Python 3.13's VERIFY_X509_STRICT) insists on.
"""

from __future__ import annotations

import http.server
import os
import ssl
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, NamedTuple, Optional, Union

_CA_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
x509_extensions = v3_ca
[dn]
CN = {cn}
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""

_LEAF_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = {cn}
[leaf]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""

_EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


class CA(NamedTuple):
    cert: Path
    key: Path


class ServerCert(NamedTuple):
    cert: Path
    key: Path
    ca: CA


def _openssl(openssl: str, *args: str) -> None:
    done = subprocess.run([openssl, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stdout.decode()}")


def make_ca(directory: Path, name: str = "ca", openssl: str = "openssl") -> CA:
    """A self-signed test CA under `directory` (`<name>.pem`, `<name>.key`)."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / (name + ".cnf")
    config.write_text(_CA_CONFIG.format(cn="clusterwatch test CA " + name))
    ca = CA(directory / (name + ".pem"), directory / (name + ".key"))
    _openssl(openssl, "req", "-x509", "-config", str(config), *_EC_KEY,
             "-keyout", str(ca.key), "-out", str(ca.cert), "-days", "2", "-sha256")
    return ca


def make_server_cert(ca: CA, directory: Path, name: str = "server",
                     openssl: str = "openssl") -> ServerCert:
    """A server certificate for 127.0.0.1 and localhost signed by `ca`."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / (name + ".cnf")
    config.write_text(_LEAF_CONFIG.format(cn="localhost"))
    csr = directory / (name + ".csr")
    leaf = ServerCert(directory / (name + ".pem"), directory / (name + ".key"), ca)
    _openssl(openssl, "req", "-new", "-config", str(config), *_EC_KEY,
             "-keyout", str(leaf.key), "-out", str(csr))
    _openssl(openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca.cert),
             "-CAkey", str(ca.key), "-set_serial", str(int.from_bytes(os.urandom(8), "big")),
             "-days", "2", "-sha256", "-extfile", str(config), "-extensions", "leaf",
             "-out", str(leaf.cert))
    return leaf


class Post(NamedTuple):
    path: str
    headers: dict[str, str]
    body: bytes


# A status, or a function of the posted body giving one.
Script = Union[list[int], Callable[[bytes], int]]


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (the timeout test) is expected, not a failure


class MonitorServer:
    """A loopback monitor: records every POST and answers from `script`.

    `script` is a list of statuses used one per request (200 once it is used up) or a
    function of the body. `echo_auth` puts the request's Authorization header in the answer's
    body, as a careless server might. `delay` holds each answer back that many seconds;
    `hold` never answers (each request is held until `close()`, then dropped), so a client's
    timeout is decided by its own clock alone.
    Created bound but not listening: connections are refused (the monitor is "down") until
    `start()`.
    """

    def __init__(self, cert: Optional[ServerCert], script: Optional[Script] = None,
                 echo_auth: bool = False, delay: float = 0.0, hold: bool = False) -> None:
        self.posts: list[Post] = []
        self.script: Script = script if script is not None else []
        self.echo_auth = echo_auth
        self.delay = delay
        self.hold = hold
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self.httpd = _QuietServer(("127.0.0.1", 0), self._handler(), bind_and_activate=False)
        self.httpd.server_bind()
        if cert is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(cert.cert), str(cert.key))
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        scheme = "https" if cert is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/api/reporter/records"

    def start(self) -> MonitorServer:
        self.httpd.server_activate()
        self._thread = threading.Thread(target=self.httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # held requests end, unanswered
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(5)
        self.httpd.server_close()

    def __enter__(self) -> MonitorServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _status(self, body: bytes) -> int:
        with self._lock:
            if callable(self.script):
                return self.script(body)
            return self.script.pop(0) if self.script else 200

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with server._lock:
                    server.posts.append(Post(self.path, dict(self.headers), body))
                status = server._status(body)
                if server.hold:
                    server._closing.wait()
                    self.close_connection = True
                    return
                if server.delay:
                    time.sleep(server.delay)
                answer = b'{"ok": true}' if status < 300 else b'{"error": "scripted"}'
                if server.echo_auth:
                    answer += b" you sent: " + self.headers.get("Authorization", "").encode()
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

