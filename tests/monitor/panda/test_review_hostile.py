"""Hostile inputs found by the issue 12 review: each once broke a path a user reaches (a 500
page, a traceback from the remote builder)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from clusterwatch.errors import RunError
from clusterwatch.http_client import HttpResponse
from clusterwatch.monitor.core.models import HostReport
from clusterwatch.monitor.panda.iri.client import view_file
from clusterwatch.monitor.panda.iri.errors import IriError
from clusterwatch.monitor.panda.panda_settings import panda_database
from clusterwatch.monitor.panda.remote.metrics import parse_metrics
from clusterwatch.monitor.panda.remote.run import _from_file, store
from clusterwatch.monitor.panda.server_rows import SourceFailed
from clusterwatch.reporter.queue_config_file import QueueConfigError, decode_queue_config
from tests.monitor.records import KEY, example
from tests.support.monitor_console import CLUSTERWATCH, console_environ, copy_migrated


@pytest.mark.django_db
@pytest.mark.parametrize("pandaid", ["\u00b2", "1\u00b3", "\u0661\u0662", "\uff15", "\u2460"])
def test_it_answers_400_for_a_pandaid_of_other_digits(operator: Client, pandaid: str) -> None:
    # str.isdigit() is true for superscripts and circled digits, which int() refuses (a 500),
    # and for Arabic-Indic or fullwidth digits, which int() reads as another job's number.
    response = operator.get("/jobs/", {"pandaid": pandaid})
    assert response.status_code == 400


def nested(depth: int) -> bytes:
    return (b'{"Q": {"queueStatus": "online", "submitter": ' + b'{"a": ' * depth + b"1"
            + b"}" * depth + b"}}")


def test_it_refuses_a_queue_config_nested_deeper_than_the_merge_can_copy() -> None:
    # json.loads takes ~1,000 levels; the template merge's deepcopy took half: a RecursionError
    # (a traceback from remote_harvester_report, the reporter's section lost).
    with pytest.raises(QueueConfigError, match=r"^queue configuration q is not usable JSON: "
                                               r"nested too deeply$"):
        decode_queue_config(nested(900), "q")
    assert decode_queue_config(nested(20), "q")["Q"]["queueStatus"] == "online"


def test_it_makes_a_deeply_nested_queue_config_file_a_failed_source(tmp_path: Any) -> None:
    path = tmp_path / "panda_queueconfig.json"
    path.write_bytes(nested(900))
    failed = _from_file(str(path))
    assert isinstance(failed, SourceFailed)
    assert failed.reason == f"queue configuration {path} is not usable JSON: nested too deeply"


DEEP_JSON = b"[" * 200_000 + b"]" * 200_000


def serving(*answers: HttpResponse) -> Any:
    """An IRI API that gives `answers` in turn."""
    pending = list(answers)

    def http(method: str, url: str, body: Any, headers: Any, timeout: float,
             max_body: int) -> HttpResponse:
        return pending.pop(0)
    return http


@pytest.mark.parametrize(("answers", "kind"), [
    ((HttpResponse(200, DEEP_JSON),), "garbage"),
    ((HttpResponse(200, b'{"task_id": "t1"}'), HttpResponse(200, DEEP_JSON)), "garbage"),
    ((HttpResponse(500, DEEP_JSON),), "unavailable"),
])
def test_it_makes_a_deeply_nested_iri_answer_an_iri_error(answers: tuple[HttpResponse, ...],
                                                          kind: str) -> None:
    # json.loads raises RecursionError (no ValueError) on such a body: it was a traceback.
    with pytest.raises(IriError) as caught:
        view_file("https://127.0.0.1:9/api/v1", "cfs", "/q.json", "secret-token",
                  http=serving(*answers), sleep=lambda _: None)
    assert caught.value.kind == kind and "secret-token" not in str(caught.value)


@pytest.mark.parametrize("sslmode", ["hunter2", "VERIFY-FULL", ""])
def test_it_exits_78_for_an_sslmode_libpq_does_not_know(tmp_path: Path, sslmode: str) -> None:
    # It was exit 1 with a record stored whose every table said "invalid sslmode value".
    config = tmp_path / "panda_queueconfig.json"
    config.write_text("{}", encoding="utf-8")
    env = {**console_environ(tmp_path), "CLUSTERWATCH_PANDA_DATABASE_URL":
           f"postgresql://panda@127.0.0.1:9/panda?sslmode={sslmode}"}
    done = subprocess.run([CLUSTERWATCH, "monitor", "remote_harvester_report", "--key", "k",
                           "--harvester-id", "h", "--queue-config", str(config)],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout) == (78, "")
    assert done.stderr.count("\n") == 1 and "sslmode" in done.stderr


def test_it_takes_every_sslmode_libpq_knows() -> None:
    for mode in ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"):
        database = panda_database({"CLUSTERWATCH_PANDA_DATABASE_URL":
                                   f"postgresql://u@h/d?sslmode={mode}"})
        assert database is not None and database.options == {"sslmode": mode}


@pytest.mark.parametrize("options", [
    ("--harvester-id", "a\tb", "--queue-config", "q.json"),
    ("--harvester-id", "h" * 51, "--queue-config", "q.json"),
    ("--harvester-id", "h", "--iri-url", "http://127.0.0.1/api/v1", "--iri-resource", "cfs",
     "--iri-path", "/q.json", "--iri-token-file", "token"),
    ("--harvester-id", "h", "--iri-url", "https://127.0.0.1/api/v1", "--iri-resource", "cfs",
     "--iri-path", "q.json", "--iri-token-file", "token"),
])
def test_it_refuses_to_register_a_remote_key_the_builder_would_refuse(
        tmp_path: Path, options: tuple[str, ...], migrated_sqlite: Path) -> None:
    # They were registered (exit 0) and the timer then failed every five minutes with 78.
    data = copy_migrated(migrated_sqlite, tmp_path / "data")
    env = console_environ(data)
    done = subprocess.run([CLUSTERWATCH, "monitor", "register_harvester", "perlmutter-harvester",
                           "--remote", *options], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    listed = subprocess.run([CLUSTERWATCH, "monitor", "list_harvesters"], env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert "perlmutter-harvester" not in listed.stdout


@pytest.mark.parametrize("escape", ["\\u0000", "\\ud800", "\\udfff"])
@pytest.mark.parametrize("where", ["name", "value"])
def test_it_refuses_a_queue_config_holding_a_string_no_database_stores(escape: str,
                                                                       where: str) -> None:
    # Valid JSON, but PostgreSQL refuses a NUL or a lone surrogate in a record: ingest refuses
    # a posted record holding one (400 unstorable), and the remote builder stored it as is.
    name, value = ("Q" + escape, "online") if where == "name" else ("Q", "on" + escape)
    text = '{"' + name + '": {"queueStatus": "' + value + '"}}'
    with pytest.raises(QueueConfigError, match=r"^queue configuration q holds a NUL character "
                                               r"or a lone surrogate"):
        decode_queue_config(text.encode("ascii"), "q")
    assert decode_queue_config(b'{"Q": {"note": "\\u00e9\\ud83d\\ude00"}}', "q")


def test_it_stores_no_nul_from_a_queue_config(tmp_path: Path) -> None:
    path = tmp_path / "panda_queueconfig.json"
    path.write_bytes(b'{"Q\\u0000x": {"queueStatus": "online"}}')
    failed = _from_file(str(path))
    assert isinstance(failed, SourceFailed) and "\x00" not in failed.reason


@pytest.mark.django_db
@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b", float("inf")])
def test_it_refuses_to_store_a_built_record_ingest_would_refuse(bad: Any) -> None:
    # A value from the PanDA database (a metrics document, a message) that ingest refuses in a
    # POST (400: NUL, lone surrogate, infinity) was stored as is by the remote builder: SQLite
    # took it, PostgreSQL would not.
    record = example()
    record["harvester_db"]["service_metrics"] = {"error": "x", "by_host": {"n1": bad}}
    with pytest.raises(RunError, match=r"^the record was refused: "):
        store(KEY, record, 1000)
    assert not HostReport.objects.filter(key=KEY).exists()


@pytest.mark.parametrize("text", ['{"a": "\\u0000"}', '{"a": "\\udc00"}', '{"a": Infinity}',
                                  '{"a": NaN}', '{"a": ' + "[" * 100 + "]" * 100 + "}"])
def test_it_makes_metrics_no_record_could_store_that_node_s_error(text: str) -> None:
    # Valid to json.loads, refused by ingest: the whole record was then refused at each run.
    parsed = parse_metrics(text)
    assert set(parsed) == {"error"} and parsed["error"].startswith("not usable JSON")
    assert parse_metrics('{"a": 1.5, "b": "\\u00e9"}') == {"a": 1.5, "b": "\u00e9"}
