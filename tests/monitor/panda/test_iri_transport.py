"""The IRI client's transport: a server that drips its answer, one that is down, a certificate
no one vouches for, a redirect, and a fresh process that trusts a site CA the usual way."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterwatch.loopback.dripping_server import DrippingServer
from clusterwatch.loopback.fake_iri import FakeIri
from clusterwatch.loopback.http_recorder import HttpRecorder, ScriptedResponse
from clusterwatch.loopback.services import free_port
from clusterwatch.monitor.panda.iri.client import view_file
from clusterwatch.monitor.panda.iri.errors import IriError
from tests.monitor.panda.iri_support import CONFIG, CONFIG_PATH, RESOURCE, TOKEN, token_file
from tests.support.tls import ServerCert

TIMEOUT = 1.5
MARGIN = 3.0  # a loaded machine's slack, one-sided: the dripping answer takes 16 s whole


def failure(base_url: str, **options: float) -> IriError:
    with pytest.raises(IriError) as info:
        view_file(base_url, RESOURCE, CONFIG_PATH, TOKEN, **{"timeout_s": TIMEOUT, **options})
    return info.value


@pytest.mark.usefixtures("trusting")
def test_it_gives_up_on_a_dripping_answer_at_its_timeout(iri_tls: ssl.SSLContext) -> None:
    # Each byte arrives well within any per-read timeout; only the whole-exchange deadline
    # ends the wait.
    answer = json.dumps({"task_id": "task-1"}).encode()
    with DrippingServer(body=answer, interval=0.2, tls=iri_tls) as server:
        started = time.monotonic()
        error = failure(server.url + "/api/v1")
        elapsed = time.monotonic() - started
    assert (error.kind, str(error)) == (
        "timeout", f"IRI API gave no answer to the view request within {TIMEOUT:g} s")
    assert elapsed < TIMEOUT + MARGIN


def test_it_reports_an_api_that_is_down() -> None:
    error = failure(f"https://127.0.0.1:{free_port()}/api/v1")
    assert (error.kind, error.status) == ("down", None)
    assert str(error) == "IRI API cannot be reached (connection: ConnectionRefusedError)"


def test_it_refuses_a_certificate_it_does_not_trust(iri: FakeIri) -> None:
    error = failure(iri.base_url)
    assert error.kind == "down" and str(error).startswith("IRI API cannot be reached (tls: ")
    assert iri.requests == []  # nothing, the token least of all, went over that connection


@pytest.mark.usefixtures("trusting")
def test_it_does_not_follow_a_redirect(iri_tls: ssl.SSLContext, iri: FakeIri) -> None:
    # A redirect to a look-alike API: following it would hand it the token.
    moved = ScriptedResponse(302, b"", {"Location": iri.base_url + "/filesystem/view/x"})
    redirector = HttpRecorder(default=moved)
    redirector.tls = iri_tls
    with redirector:
        error = failure(redirector.url + "/api/v1")
    assert (error.kind, error.status) == ("refused", 302)
    assert "redirects are not followed" in str(error)
    assert iri.requests == []


def test_it_trusts_a_site_ca_named_by_ssl_cert_file_in_a_fresh_process(
    iri: FakeIri, iri_cert: ServerCert, tmp_path: Path,
) -> None:
    # How the remote builder's command runs under systemd: the token from its file, the CA
    # from the environment, nothing secret in argv.
    script = ("import sys\n"
              "from clusterwatch.monitor.panda.iri.client import view_file\n"
              "from clusterwatch.monitor.panda.iri.settings import read_token_file\n"
              "url, resource, path, token_path = sys.argv[1:]\n"
              "content = view_file(url, resource, path, read_token_file(token_path))\n"
              "sys.stdout.buffer.write(content)\n")
    argv = [sys.executable, "-c", script, iri.base_url, RESOURCE, CONFIG_PATH,
            str(token_file(tmp_path))]
    environment = {**os.environ, "SSL_CERT_FILE": str(iri_cert.ca.cert)}
    done = subprocess.run(argv, capture_output=True, env=environment, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, CONFIG, b"")
    assert TOKEN not in " ".join(argv)
