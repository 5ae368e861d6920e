"""The shipped nginx site (deploy/nginx/clusterwatch-monitor.conf) in front of a monitor on
127.0.0.1, for tests: the production front door, with only its addresses swapped.

`monitor_proxy(site, upstream_port, work_dir, certificate=..., key=...)` renders the site
file: its `listen` lines onto free loopback ports (IPv4 only), its certificate onto the
given one, its upstream onto the monitor's port and the static directory into `work_dir`;
every other directive (timeouts, buffering, limits) is kept as shipped. Each swap must
find what it replaces, so a change to the shipped file that the rendering no longer
understands fails loudly instead of testing something else. nginx then runs in the
foreground with its pid, logs and temporary files in `work_dir`, until the block ends:
started and stopped by the harness's supervisor (loopback/supervisor.py), leading its own
process group, so that a SIGKILL after the timeout takes its worker along.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.services import LOOPBACK, MissingComponent, log_tail

STARTUP_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
READY_PATH = "/accounts/login/"
# nginx lives in /usr/sbin, which is not on every user's PATH.
_SEARCH = (os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin")
INSTALL_HINT = ("install it with: sudo apt-get install --no-install-recommends nginx "
                "(scripts/setup installs it)")

_MAIN_CONFIG = """\
{user}worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log info;
events {{ worker_connections 512; }}
http {{
    access_log {work}/access.log;
    client_body_temp_path {work}/temp/client_body;
    proxy_temp_path {work}/temp/proxy;
    fastcgi_temp_path {work}/temp/fastcgi;
    uwsgi_temp_path {work}/temp/uwsgi;
    scgi_temp_path {work}/temp/scgi;
    include {work}/site.conf;
}}
"""


class ProxyStartError(supervisor.ServiceStartError):
    """nginx refused the configuration, exited or did not answer; the message ends with its
    error log."""


@dataclass(frozen=True)
class MonitorProxy:
    """A running nginx: `url` is https://127.0.0.1:PORT, trusted through `ca_file`."""

    url: str
    http_url: str  # the plain-HTTP server of the site file (it redirects to HTTPS)
    process: subprocess.Popen[bytes]
    ca_file: Path
    log_path: Path

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)


def find_nginx() -> str:
    """nginx's path, or MissingComponent with the install command."""
    found = shutil.which("nginx", path=os.pathsep.join(_SEARCH))
    if not found:
        raise MissingComponent("nginx", INSTALL_HINT)
    return found


def render_site(text: str, *, port: int, http_port: int, upstream_port: int,
                certificate: Path, key: Path, static_dir: Path) -> str:
    """The shipped site file with loopback addresses and test paths swapped in."""
    swaps = [
        (r"^(\s*)listen\s+443\s+ssl;", rf"\1listen {LOOPBACK}:{port} ssl;"),
        (r"^(\s*)listen\s+80;", rf"\1listen {LOOPBACK}:{http_port};"),
        (r"^\s*listen\s+\[::\]:\d+[^;]*;\n", ""),
        (r"^(\s*)ssl_certificate\s+\S+;", rf"\1ssl_certificate {certificate};"),
        (r"^(\s*)ssl_certificate_key\s+\S+;", rf"\1ssl_certificate_key {key};"),
        (r"^(\s*)server\s+127\.0\.0\.1:8000;", rf"\1server {LOOPBACK}:{upstream_port};"),
        (r"^(\s*)alias\s+/var/lib/clusterwatch/monitor/static/;", rf"\1alias {static_dir}/;"),
    ]
    for pattern, replacement in swaps:
        text, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
        if count == 0:
            raise ProxyStartError("nginx", f"the site file no longer has what /{pattern}/ "
                                  "swaps")
    return text


@contextlib.contextmanager
def monitor_proxy(site: Path, upstream_port: int, work_dir: Path, *, certificate: Path,
                  key: Path, ca_file: Path, startup_timeout: float = STARTUP_TIMEOUT,
                  ) -> Iterator[MonitorProxy]:
    """nginx serving `site` (the shipped file) in front of 127.0.0.1:`upstream_port`.

    `certificate`/`key`: the server's, valid for 127.0.0.1; `ca_file` is what clients trust.
    """
    nginx = find_nginx()
    work_dir = Path(work_dir).absolute()
    (work_dir / "temp").mkdir(parents=True, exist_ok=True)
    (work_dir / "static").mkdir(exist_ok=True)
    config = work_dir / "nginx.conf"
    # Run as root (a container, CI), nginx would switch its workers to `nobody`, who cannot
    # enter a private temporary directory: keep them as the caller.
    user = "user root;\n" if os.geteuid() == 0 else ""
    config.write_text(_MAIN_CONFIG.format(user=user, work=work_dir))
    log_path = work_dir / "error.log"

    def command(ports: supervisor.Ports) -> list[str]:
        port, http_port = ports
        (work_dir / "site.conf").write_text(render_site(
            site.read_text(), port=port, http_port=http_port, upstream_port=upstream_port,
            certificate=certificate, key=key, static_dir=work_dir / "static"))
        return [nginx, "-p", f"{work_dir}/", "-e", str(log_path), "-c", str(config),
                "-g", "daemon off;"]

    context = ssl.create_default_context(cafile=str(ca_file))
    daemon = supervisor.start(
        "nginx", command, work_dir / "nginx.out",
        lambda ports: supervisor.http_ok(f"https://{LOOPBACK}:{ports[0]}{READY_PATH}",
                                         context=context),
        ports=2, startup_timeout=startup_timeout, own_logs=[log_path], append=True,
        process_group=True, stop_timeout=STOP_TIMEOUT, error=ProxyStartError)
    port, http_port = daemon.ports
    with supervisor.running(daemon):
        yield MonitorProxy(url=f"https://{LOOPBACK}:{port}",
                           http_url=f"http://{LOOPBACK}:{http_port}", process=daemon.process,
                           ca_file=ca_file, log_path=log_path)
