"""What the PanDA view's tests share: a throwaway CA (tests/support/tls.py's helper, with the
`openssl` command line), the loopback IRI API over HTTPS with it, and a client that trusts it.

In-process tests use `trusting` (the seam's TLS context given the test CA, verified as any
other); a command run as a subprocess trusts it with `SSL_CERT_FILE=<ca.cert>` in its
environment, which the default context reads.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest

from clusterwatch.loopback.fake_iri import FakeIri
from clusterwatch.notify import deadline
from tests.components import need_binary
from tests.monitor.panda.iri_support import CONFIG, CONFIG_PATH, RESOURCE, TOKEN
from tests.support.tls import ServerCert, make_ca, make_server_cert


@pytest.fixture(scope="session")
def iri_cert(tmp_path_factory: pytest.TempPathFactory) -> ServerCert:
    openssl = need_binary("openssl")
    base = tmp_path_factory.mktemp("iri-tls")
    return make_server_cert(make_ca(base, openssl=openssl), base, openssl=openssl)


@pytest.fixture
def iri_tls(iri_cert: ServerCert) -> ssl.SSLContext:
    """A server context for loopback HTTPS servers with the test certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(iri_cert.cert), str(iri_cert.key))
    return context


@pytest.fixture
def trusting(iri_cert: ServerCert, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client trusts the test CA, and verifies the server as it verifies any other."""
    context = deadline.new_tls_context()
    context.load_verify_locations(str(iri_cert.ca.cert))
    monkeypatch.setattr(deadline, "_tls_context", lambda: context)


@pytest.fixture
def iri(iri_tls: ssl.SSLContext) -> Iterator[FakeIri]:
    """The loopback IRI API (HTTPS, test CA) serving CONFIG at RESOURCE:CONFIG_PATH."""
    with FakeIri(TOKEN, {RESOURCE: {CONFIG_PATH: CONFIG}}, tls=iri_tls) as server:
        yield server
