"""gunicorn's access log as the shipped configuration writes it (site/access_log.py): a share
link's secret never in it, whatever part of the request carries it; its prefix and the rest
of the line as gunicorn writes them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

from gunicorn.config import Config

from clusterwatch.monitor.site import gunicorn_conf
from clusterwatch.monitor.site.access_log import RedactingLogger, redacted

PREFIX = "cws_AbCd1234"
SECRET = "s3cr3t-" + "Q" * 36  # 43 characters, as a link's
TOKEN = f"{PREFIX}_{SECRET}"


def _logged(tmp_path: Path, path: str, query: str = "", referer: str = "-") -> str:
    config = Config()
    log = tmp_path / "access.log"
    config.set("accesslog", str(log))
    config.set("access_log_format", config.access_log_format + ' %(U)s "%(q)s" %({referer}i)s')
    logger = RedactingLogger(config)
    environ = {"REQUEST_METHOD": "GET", "RAW_URI": path + (f"?{query}" if query else ""),
               "PATH_INFO": path, "QUERY_STRING": query, "SERVER_PROTOCOL": "HTTP/1.1",
               "REMOTE_ADDR": "127.0.0.1", "HTTP_REFERER": referer, "HTTP_USER_AGENT": "t"}
    response = SimpleNamespace(status="200 OK", sent=42, headers=[])
    request = SimpleNamespace(headers=[("REFERER", referer)])
    logger.access(response, request, environ, timedelta(milliseconds=3))
    for handler in logger.access_log.handlers:
        handler.flush()
    return log.read_text()


def test_the_shipped_configuration_uses_the_redacting_logger() -> None:
    assert gunicorn_conf.logger_class == "clusterwatch.monitor.site.access_log.RedactingLogger"
    assert gunicorn_conf.accesslog == "-"


def test_no_part_of_a_logged_request_carries_a_links_secret(tmp_path: Path) -> None:
    line = _logged(tmp_path, f"/usage/shared/{TOKEN}/plot/cpu", query=f"again={TOKEN}",
                   referer=f"https://monitor.example.org/usage/shared/{TOKEN}/")
    assert SECRET not in line and SECRET[:12] not in line
    assert f'"GET /usage/shared/{PREFIX}_[redacted]/plot/cpu?again={PREFIX}_[redacted]' in line
    assert " 200 42 " in line and "/usage/shared/" in line


def test_whatever_stands_where_a_token_goes_is_redacted_and_nothing_else() -> None:
    assert redacted("GET /usage/shared/garbage%00x/pdf") == "GET /usage/shared/[redacted]/pdf"
    assert redacted(f"/usage/shared/{PREFIX}_abc") == f"/usage/shared/{PREFIX}_[redacted]"
    assert redacted(f"again={TOKEN}&x") == f"again={PREFIX}_[redacted]&x"  # a token alone
    for plain in ("GET /usage/jobs/4242/ HTTP/1.1", "/api/v1/jobs/4242/usage", "-"):
        assert redacted(plain) == plain


def test_a_percent_encoded_share_path_is_redacted_as_what_it_means(tmp_path: Path) -> None:
    encoded = f"/usage%2Fshared%2F%63ws%5F{PREFIX[4:]}%5F{SECRET}/pdf"
    line = _logged(tmp_path, encoded)  # the request line as sent; the path as gunicorn's
    assert SECRET not in line and "%5F" + SECRET not in line
    assert f"/usage/shared/{PREFIX}_[redacted]/pdf" in line
    assert redacted("/usage/jobs/4242/?q=a%20b") == "/usage/jobs/4242/?q=a%20b"  # untouched
