"""The token stays in the Authorization header: no error of any kind, no log line, no output
carries it, nor a URL (the API's problem documents quote the request's, query included),
even from a careless server that echoes both back."""

from __future__ import annotations

import logging
import traceback
from typing import Any, Callable

import pytest

from clusterwatch.loopback.fake_iri import OUTAGE, FakeIri
from clusterwatch.monitor.panda.iri.client import view_file
from clusterwatch.monitor.panda.iri.errors import IriError
from tests.monitor.panda.iri_support import CONFIG, CONFIG_PATH, RESOURCE, TOKEN

pytestmark = pytest.mark.usefixtures("trusting")


def _wrong_token(iri: FakeIri) -> None:
    iri.token = "the-token-nersc-expects"


def _outage(iri: FakeIri) -> None:
    iri.fail_all = OUTAGE


def _slow(iri: FakeIri) -> None:
    iri.hold = True  # never answered: the client's 1 s timeout decides


def _never_done(iri: FakeIri) -> None:
    iri.polls_before_done = 10**9


def _huge(iri: FakeIri) -> None:
    iri.files[RESOURCE][CONFIG_PATH] = b" " * (6 * 1024 * 1024)


def _set(name: str, value: Any) -> Callable[[FakeIri], None]:
    return lambda iri: setattr(iri, name, value)


SCENARIOS: dict[str, tuple[Callable[[FakeIri], None], str]] = {
    "401 echoing the header": (_wrong_token, "unauthorized"),
    "500 outage echoing the header": (_outage, "unavailable"),
    "unknown resource echoing the header": (_set("files", {}), "refused"),
    "answer held back": (_slow, "timeout"),
    "task never done": (_never_done, "timeout"),
    "failed task": (_set("outcome", "failed"), "failed"),
    "canceled task": (_set("outcome", "canceled"), "canceled"),
    "oversize file": (_huge, "too_large"),
    "garbage task": (_set("garbage", "task"), "garbage"),
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_it_keeps_the_token_and_urls_out_of_every_failure(
    iri: FakeIri, scenario: str, caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    arrange, kind = SCENARIOS[scenario]
    iri.echo_secrets = True
    arrange(iri)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(IriError) as info:
        view_file(iri.base_url, RESOURCE, CONFIG_PATH, TOKEN, timeout_s=1.0,
                  poll_interval_s=0.05, max_wait_s=2.0)
    error = info.value
    assert error.kind == kind
    message = str(error)
    assert "\n" not in message
    shown = [message, repr(error), "".join(traceback.format_exception(error)), caplog.text,
             *capsys.readouterr()]
    for text in shown:
        assert TOKEN not in text
        assert "?path=" not in text and "127.0.0.1" not in text
    if "echoing" in scenario:  # the server did quote them: scrubbed, not just absent
        assert "[token]" in message and "[url]" in message


def test_it_logs_the_task_it_polls_without_the_token(iri: FakeIri,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="clusterwatch.monitor.panda")
    assert view_file(iri.base_url, RESOURCE, CONFIG_PATH, TOKEN, poll_interval_s=0.05) == CONFIG
    lines = [record.getMessage() for record in caplog.records]
    assert [line.rsplit(" ", 1)[-1] for line in lines] == ["submitted", "pending", "completed"]
    assert all(TOKEN not in line and CONFIG_PATH not in line for line in lines)


def test_it_sends_the_token_in_the_authorization_header_alone(iri: FakeIri) -> None:
    view_file(iri.base_url, RESOURCE, CONFIG_PATH, TOKEN, poll_interval_s=0.05)
    for sent in iri.requests:
        assert TOKEN not in sent.path and TOKEN not in sent.body.decode()
        others = {name: value for name, value in sent.headers.items() if name != "authorization"}
        assert TOKEN not in repr(others)
        assert sent.headers["authorization"] == f"Bearer {TOKEN}"
