"""The nginx harness: the shipped site rendered onto loopback with everything else kept, a
site it no longer understands refused, a missing nginx reported with the install command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterwatch.loopback import monitor_proxy
from clusterwatch.loopback.monitor_proxy import ProxyStartError, find_nginx, render_site
from clusterwatch.loopback.services import MissingComponent

SITE = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "clusterwatch-monitor.conf"


def _render(text: str) -> str:
    return render_site(text, port=40001, http_port=40002, upstream_port=40003,
                       certificate=Path("/t/cert.pem"), key=Path("/t/key.pem"),
                       static_dir=Path("/t/static"))


def _directives(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_it_swaps_only_addresses_and_paths_into_the_shipped_site() -> None:
    shipped = SITE.read_text()
    rendered = _render(shipped)
    assert re.findall(r"listen [^;]+;", rendered) == ["listen 127.0.0.1:40001 ssl;",
                                                     "listen 127.0.0.1:40002;"]
    assert "server 127.0.0.1:40003;" in rendered and "/t/cert.pem" in rendered
    swapped = re.compile(r"^(listen|ssl_certificate|ssl_certificate_key|server 127|alias)\b")
    kept = [line for line in _directives(shipped) if not swapped.match(line)]
    assert kept == [line for line in _directives(rendered) if not swapped.match(line)]
    assert any(line.startswith("client_body_timeout") for line in kept)


def test_it_refuses_a_site_it_no_longer_understands() -> None:
    with pytest.raises(ProxyStartError, match="no longer has"):
        _render(SITE.read_text().replace("127.0.0.1:8000", "unix:/run/monitor.sock"))


def test_a_missing_nginx_names_the_package(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setattr(monitor_proxy, "_SEARCH", (str(tmp_path),))
    with pytest.raises(MissingComponent, match="apt-get install --no-install-recommends nginx"):
        find_nginx()
