"""The host-report API: what is stored, what is refused (and then nothing is stored)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from clusterwatch.monitor.core.models import HostReport, JobPush, LatestQueue, LatestReport
from clusterwatch.monitor.ingest import tokens
from tests.monitor.ingest.support import at, auth, counts, new_token, post, url
from tests.monitor.records import KEY, example, utc
from tests.monitor.served_support import exchange

pytestmark = pytest.mark.django_db


def _refused(response: Any, status: int, error: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    answer: dict[str, Any] = response.json()
    assert answer["error"] == error
    assert answer["detail"]
    return answer


def test_it_stores_a_record_and_answers_201_with_the_receipt(client: Client) -> None:
    token = new_token()
    response = post(client, token, example(collected_at=at(0)))
    assert response.status_code == 201
    answer = response.json()
    report = HostReport.objects.get()
    assert answer == {"id": report.pk, "key": KEY, "size_bytes": report.size_bytes,
                      "collected_at": utc(at(0)), "latest": True}
    assert report.size_bytes == len(json.dumps(example(collected_at=at(0))).encode())
    assert report.token is not None and report.token.prefix == token[:12]
    assert report.record == example(collected_at=at(0))
    assert LatestReport.objects.get(key=KEY).report == report
    assert set(LatestQueue.objects.values_list("queue", flat=True)) == {
        "BNL_PanDA_1", "UM_GREX_PanDA_1", "BNL_ARM_1", "MWT2_UCORE"}
    assert sorted(JobPush.objects.values_list("pandaid", "workerid")) == [
        (6723451, 8812345), (6723452, 8812347)]
    assert "sessionid" not in response.cookies and "csrftoken" not in response.cookies


def test_it_accepts_bearer_and_any_case_of_the_scheme(client: Client) -> None:
    token = new_token()
    for number, scheme in enumerate(["Bearer", "token", "BEARER"]):
        response = client.post(url(), json.dumps(example(collected_at=at(number))),
                               content_type="application/json", **auth(token, scheme))
        assert response.status_code == 201, scheme


def test_it_accepts_the_url_without_its_trailing_slash(client: Client) -> None:
    token = new_token()
    response = client.post(url().rstrip("/"), json.dumps(example()),
                           content_type="application/json", **auth(token))
    assert response.status_code == 201


def test_it_enforces_csrf_nowhere_on_the_api() -> None:
    strict = Client(enforce_csrf_checks=True)
    assert post(strict, new_token(), example()).status_code == 201


def test_it_returns_the_latest_record_with_its_age(client: Client) -> None:
    token = new_token()
    post(client, token, example(collected_at=at(0)))
    response = client.get(url(), **auth(token))
    assert response.status_code == 200
    answer = response.json()
    report = HostReport.objects.get()
    assert answer["key"] == KEY and answer["id"] == report.pk
    assert answer["collected_at"] == utc(at(0))
    assert answer["received_at"] == utc(report.received_at)
    expected_age = (timezone.now() - at(0)).total_seconds()
    assert abs(answer["age_s"] - expected_age) < 5
    assert answer["record"] == example(collected_at=at(0))


def test_it_says_when_a_key_never_reported(client: Client) -> None:
    response = client.get(url(), **auth(new_token()))
    answer = _refused(response, 404, "no_record")
    assert answer["detail"] == f"no record for key {KEY} yet"


def test_it_keeps_latest_by_collected_at_when_a_backlog_arrives_late(client: Client) -> None:
    token = new_token()
    newer = post(client, token, example(collected_at=at(10)))
    assert newer.json()["latest"] is True
    older = post(client, token, example(collected_at=at(5)))
    assert older.status_code == 201
    assert older.json()["latest"] is False
    assert HostReport.objects.count() == 2  # the late record is kept all the same
    assert LatestReport.objects.get(key=KEY).report_id == newer.json()["id"]
    assert client.get(url(), **auth(token)).json()["collected_at"] == utc(at(10))
    newest = post(client, token, example(collected_at=at(15)))
    assert newest.json()["latest"] is True
    assert client.get(url(), **auth(token)).json()["id"] == newest.json()["id"]


def test_it_stores_a_retried_record_once(client: Client) -> None:
    token = new_token()
    first = post(client, token, example(collected_at=at(0)))
    again = post(client, token, example(collected_at=at(0)))
    assert again.status_code == 200
    assert again.json() == {**first.json(), "duplicate": True}
    assert HostReport.objects.count() == 1


def test_it_keeps_two_different_records_with_the_same_time(client: Client) -> None:
    token = new_token()
    first = post(client, token, example(collected_at=at(0)))
    other = example(collected_at=at(0))
    other["collect_seconds"] = 1.5
    second = post(client, token, other)
    assert second.status_code == 201 and second.json()["latest"] is False
    assert LatestReport.objects.get().report_id == first.json()["id"]


def test_it_lets_one_token_write_each_of_its_keys(client: Client) -> None:
    token = new_token("osgsub01", "osgsub01-harvester")
    for key in ("osgsub01", "osgsub01-harvester"):
        assert post(client, token, example(key=key), key=key).status_code == 201
    assert set(LatestReport.objects.values_list("key", flat=True)) == {
        "osgsub01", "osgsub01-harvester"}


# --- refusals: the status, a readable reason, and nothing stored ----------------------------


@pytest.fixture
def nothing_stored() -> Any:
    before = counts()
    yield
    assert counts() == before


@pytest.mark.usefixtures("nothing_stored")
@pytest.mark.parametrize("header", [
    None, "", "Token", "Token ", "Basic dXNlcjpwYXNz", "Token cwh_short", "cwh_abc",
    "Token cwh_AAAAAAAA_" + "a" * 43,  # well formed, unknown
    "Token cwh_AAAAAAAA_" + "a" * 43 + " extra",
])
def test_it_refuses_a_missing_or_bad_token_with_401(client: Client, header: Any) -> None:
    new_token()
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = client.post(url(), json.dumps(example()), content_type="application/json",
                           **extra)
    _refused(response, 401, "token")
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.usefixtures("nothing_stored")
def test_it_refuses_a_right_prefix_with_a_wrong_secret(client: Client) -> None:
    token = new_token()
    forged = token[:13] + ("A" if token[13] != "A" else "B") + token[14:]
    _refused(post(client, forged, example()), 401, "token")


@pytest.mark.usefixtures("nothing_stored")
def test_it_refuses_a_revoked_token(client: Client) -> None:
    token = new_token()
    row = tokens.find(token[:12])
    assert row is not None and tokens.revoke(row)
    _refused(post(client, token, example()), 401, "token")
    _refused(client.get(url(), **auth(token)), 401, "token")


@pytest.mark.usefixtures("nothing_stored")
def test_it_refuses_the_token_of_another_key_with_403(client: Client) -> None:
    new_token("osgsub01")
    token = new_token(KEY)
    answer = _refused(post(client, token, example(key="osgsub01"), key="osgsub01"), 403,
                      "forbidden")
    assert "osgsub01" in answer["detail"]
    _refused(client.get(url("osgsub01"), **auth(token)), 403, "forbidden")


@pytest.mark.usefixtures("nothing_stored")
@pytest.mark.parametrize("key", ["nobody01", "-bad", "a" * 129, "x y", "ключ"])
def test_it_refuses_an_unknown_key_with_404_to_a_valid_token(client: Client, key: str) -> None:
    token = new_token()
    _refused(post(client, token, example(key=key), key=key), 404, "unknown_key")
    _refused(client.get(url(key), **auth(token)), 404, "unknown_key")


@pytest.mark.usefixtures("nothing_stored")
def test_it_tells_no_unauthenticated_caller_whether_a_key_exists(client: Client) -> None:
    new_token(KEY)
    for key in (KEY, "nobody01"):
        _refused(post(client, None, example(key=key), key=key), 401, "token")
        bad = "cwh_AAAAAAAA_" + "b" * 43
        _refused(post(client, bad, example(key=key), key=key), 401, "token")


@pytest.mark.usefixtures("nothing_stored")
def test_it_answers_404_for_a_key_whose_tokens_are_all_revoked(client: Client) -> None:
    old = new_token("retired01")
    row = tokens.find(old[:12])
    assert row is not None
    tokens.revoke(row)
    _refused(post(client, new_token(), example(key="retired01"), key="retired01"), 404,
             "unknown_key")


@pytest.mark.usefixtures("nothing_stored")
@pytest.mark.parametrize("method", ["put", "patch", "delete", "head", "options"])
def test_it_refuses_other_methods_with_405(client: Client, method: str) -> None:
    response = getattr(client, method)(url(), **auth(new_token()))
    assert response.status_code == 405
    assert response["Allow"] == "GET, POST"


@pytest.mark.usefixtures("nothing_stored")
@override_settings(MAX_RECORD_BYTES=2000)
def test_it_refuses_a_body_over_the_limit_with_413(client: Client) -> None:
    record = example()
    assert len(json.dumps(record)) > 2000
    answer = _refused(post(client, new_token(), record), 413, "too_large")
    assert "2000 bytes" in answer["detail"]


@pytest.mark.usefixtures("nothing_stored")
def test_it_refuses_a_content_length_over_the_limit_before_reading(client: Client) -> None:
    from django.conf import settings

    claimed = str(settings.MAX_RECORD_BYTES + 1)
    response = post(client, new_token(), example(), CONTENT_LENGTH=claimed)
    answer = _refused(response, 413, "too_large")
    assert claimed in answer["detail"]


@pytest.mark.usefixtures("nothing_stored")
def test_it_refuses_a_body_one_byte_over_the_default_limit(client: Client) -> None:
    from django.conf import settings

    record = example()
    record["hostname"] = "x" * settings.MAX_RECORD_BYTES  # longer than the limit by itself
    _refused(post(client, new_token(), record), 413, "too_large")


@pytest.mark.usefixtures("nothing_stored")
@override_settings(MAX_RECORD_BYTES=1_000_000, DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_it_answers_413_when_djangos_own_upload_limit_trips(client: Client) -> None:
    answer = _refused(post(client, new_token(), example()), 413, "too_large")
    assert "upload limit" in answer["detail"]


@pytest.mark.usefixtures("nothing_stored")
@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=None, MAX_RECORD_BYTES=2000)
def test_it_still_limits_when_djangos_limit_is_off(client: Client) -> None:
    _refused(post(client, new_token(), example(), CONTENT_LENGTH="100"), 400, "json")
    _refused(post(client, new_token(), example()), 413, "too_large")


@pytest.mark.usefixtures("nothing_stored")
@pytest.mark.parametrize("claimed", ["abc", "-5", "1e3", "٣"])
def test_it_refuses_a_content_length_that_is_no_number(client: Client, claimed: str) -> None:
    _refused(post(client, new_token(), example(), CONTENT_LENGTH=claimed), 400,
             "content_length")


@pytest.mark.usefixtures("nothing_stored")
def test_it_reads_no_more_than_a_short_content_length_claims(client: Client) -> None:
    # The rest of the body is not read: what was claimed is a truncated document.
    _refused(post(client, new_token(), example(), CONTENT_LENGTH="40"), 400, "json")


@pytest.mark.usefixtures("nothing_stored")
@pytest.mark.parametrize(("data", "error"), [
    (b"", "json"),
    (b"not json", "json"),
    (b"{\"host\": ", "json"),
    (b"[1, 2]", "not_object"),
    (b"\"text\"", "not_object"),
    (b"null", "not_object"),
    (b"3", "not_object"),
    (b"\xff\xfe{}", "encoding"),
    (b"{\"host\": \"caf\xe9\"}", "encoding"),
    (b"{\"a\": NaN}", "json"),
    (b"{\"a\": 1e999}", "json"),
    (b"{\"a\": " + b"9" * 5000 + b"}", "json"),
    (b"[" * 100_000 + b"]" * 100_000, "json"),
    (b"{\"a\": " + b"[" * 100 + b"]" * 100 + b"}", "json"),
    (b"{\"a\": \"\\u0000\"}", "unstorable"),
    (b"{\"\\u0000\": 1}", "unstorable"),
    (b"{\"a\": \"\\ud800\"}", "unstorable"),
])
def test_it_refuses_a_body_that_is_no_storable_json_object(client: Client, data: bytes,
                                                           error: str) -> None:
    _refused(post(client, new_token(), data), 400, error)


@pytest.mark.usefixtures("nothing_stored")
def test_it_explains_a_schema_violation_with_its_place(client: Client) -> None:
    record = example()
    record["fetching"]["queues"]["BNL_PanDA_1"]["attempts"] = -1
    answer = _refused(post(client, new_token(), record), 400, "schema")
    assert answer["detail"] == ("at fetching.queues.BNL_PanDA_1.attempts: -1 is less than "
                                "the minimum of 0")


@pytest.mark.usefixtures("nothing_stored")
@pytest.mark.parametrize(("change", "where"), [
    (lambda r: r.pop("collected_at"), "at the top level: 'collected_at' is a required"),
    (lambda r: r.update(schema_version=2), "at schema_version: 1 was expected"),
    (lambda r: r.update(extra=1), "at the top level: Additional properties"),
    (lambda r: r["submission"]["recent_pushes"][1].update(pandaid="x"),
     "at submission.recent_pushes[1].pandaid: 'x' is not of type 'integer'"),
    (lambda r: r.update(collected_at="2026-13-45T99:00:00Z"),
     "at collected_at: '2026-13-45T99:00:00Z' is not a real UTC time"),
    (lambda r: r.update(collected_at="0001-01-01T00:00:00Z"),
     "at collected_at: '0001-01-01T00:00:00Z' is not between the years 1970 and 9000"),
    (lambda r: r.update(collected_at="2026-10-02 18:00:00"), "at collected_at: "),
])
def test_it_refuses_records_failing_the_schema(client: Client, change: Any, where: str) -> None:
    record = example()
    change(record)
    answer = _refused(post(client, new_token(), record), 400, "schema")
    assert answer["detail"].startswith(where), answer["detail"]


@pytest.mark.usefixtures("nothing_stored")
def test_it_refuses_a_record_of_another_host_than_the_url_key(client: Client) -> None:
    token = new_token(KEY, "osgsub01")
    answer = _refused(post(client, token, example(key="osgsub01"), key=KEY), 403,
                      "host_mismatch")
    assert "/api/host-reports/osgsub01/" in answer["detail"]


@pytest.mark.usefixtures("nothing_stored")
def test_it_shortens_a_reason_that_quotes_a_huge_value(client: Client) -> None:
    record = example()
    record["fetching"]["queues"]["BNL_PanDA_1"]["attempts"] = "x" * 100_000
    answer = _refused(post(client, new_token(), record), 400, "schema")
    assert len(answer["detail"]) <= 500


def test_it_answers_503_when_the_database_fails(client: Client, monkeypatch: Any) -> None:
    from django.db import OperationalError

    from clusterwatch.monitor.ingest import views

    token = new_token()

    def locked(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("database is locked")

    monkeypatch.setattr(views.store, "store_record", locked)
    response = post(client, token, example())
    _refused(response, 503, "unavailable")
    assert response["Retry-After"] == "30"
    assert HostReport.objects.count() == 0


def test_it_answers_400_when_the_database_refuses_a_value(client: Client,
                                                          monkeypatch: Any) -> None:
    from django.db import DataError

    from clusterwatch.monitor.ingest import views

    token = new_token()

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise DataError("unsupported Unicode escape sequence")

    monkeypatch.setattr(views.store, "store_record", refuse)
    _refused(post(client, token, example()), 400, "unstorable")


def test_it_never_logs_the_token_or_the_body(client: Client,
                                            caplog: pytest.LogCaptureFixture) -> None:
    token = new_token()
    record = example()
    record["hostname"] = "secret-looking-body-text"
    with caplog.at_level("DEBUG"):
        post(client, token, record)
        post(client, token, b"garbage secret-looking-body-text")
        post(client, token, example(key="osgsub01"), key="osgsub01")
        post(client, token[:-1] + "x", record)
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert token not in logged and token[13:] not in logged
    assert "secret-looking-body-text" not in logged


# --- over a real socket: what the test client cannot show -----------------------------------


def _raw_post(live_server: Any, token: str, claimed: int, data: bytes) -> tuple[int, bytes]:
    """POST `data` under a Content-Length of `claimed`, then close our sending side."""
    head = (f"POST {url()} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Token {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {claimed}\r\n"
            "Connection: close\r\n\r\n").encode()
    return exchange(live_server.thread.port, head + data, timeout=20)


@pytest.mark.django_db(transaction=True)
def test_it_refuses_a_body_shorter_than_its_content_length(live_server: Any) -> None:
    token = new_token()
    data = json.dumps(example()).encode()
    status, answer = _raw_post(live_server, token, len(data) + 500, data)
    assert status == 400 and json.loads(answer)["error"] == "body"
    assert "ended after" in json.loads(answer)["detail"]
    assert HostReport.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_it_refuses_a_huge_content_length_without_waiting_for_the_body(
        live_server: Any) -> None:
    from django.conf import settings

    status, answer = _raw_post(live_server, new_token(), settings.MAX_RECORD_BYTES * 50, b"{")
    assert status == 413 and json.loads(answer)["error"] == "too_large"
    assert HostReport.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_it_stores_a_record_posted_over_a_socket(live_server: Any) -> None:
    data = json.dumps(example()).encode()
    status, answer = _raw_post(live_server, new_token(), len(data), data)
    assert status == 201 and json.loads(answer)["latest"] is True
    assert HostReport.objects.count() == 1


def _nested(levels: int, leaf: Any = 1) -> Any:
    """`levels` containers inside one another, lists and objects taking turns."""
    value = leaf
    for level in range(levels):
        value = [value] if level % 2 else {"n": value}
    return value


# Free-form places of the record (the schema constrains nothing inside them), and the level
# of the container put there: the body is level 1.
FREE_PLACES = [
    (("harvester_db", "workers_not_finished", "deep"), 4),
    (("adjustment", "queues", "BNL_PanDA_1", "against"), 5),
    (("fetching", "queues", "BNL_PanDA_1", "extra"), 5),  # an extra property: allowed
]


@pytest.mark.usefixtures("nothing_stored")
@pytest.mark.parametrize(("place", "level"), FREE_PLACES)
# A pair of escaped surrogates is storable, but makes ingest check every string as well.
@pytest.mark.parametrize("leaf", [1, "\U0001f600"])
def test_it_refuses_nesting_deeper_than_64_levels_anywhere(client: Client, place: Any,
                                                          level: int, leaf: Any) -> None:
    record = example()
    *parents, name = place
    parent = record
    for part in parents:
        parent = parent[part]
    parent[name] = _nested(65 - level + 1, leaf)
    answer = _refused(post(client, new_token(), record), 400, "json")
    assert "64" in answer["detail"]


@pytest.mark.parametrize(("place", "level"), FREE_PLACES)
@pytest.mark.parametrize("leaf", [1, "\U0001f600"])
def test_it_stores_nesting_of_exactly_64_levels(client: Client, place: Any, level: int,
                                                leaf: Any) -> None:
    record = example()
    *parents, name = place
    parent = record
    for part in parents:
        parent = parent[part]
    parent[name] = _nested(64 - level + 1, leaf)
    response = post(client, new_token(), record)
    assert response.status_code == 201, response.content
    assert HostReport.objects.get().record == record


@pytest.mark.usefixtures("nothing_stored")
def test_it_refuses_a_deep_branch_after_many_shallow_ones(client: Client) -> None:
    record = example()
    record["harvester_db"]["workers_not_finished"] = {
        "wide": [[{"x": [i]}] for i in range(500)], "deep": _nested(62)}
    _refused(post(client, new_token(), record), 400, "json")
