"""Fuzzing the host-report API: whatever comes in, no 5xx, and a refusal stores nothing.

Bounded (a few hundred examples, no deadline) so that it runs in seconds on every test run,
against SQLite and in the PostgreSQL pass (where NUL characters, surrogates and integer
ranges are refused by the database itself if ingest let them through).
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.monitor.ingest.support import counts, mutated, mutations_of, new_token
from tests.monitor.records import KEY, example, with_queues

pytestmark = pytest.mark.django_db

# CLUSTERWATCH_FUZZ_EXAMPLES=5000 for a longer hunt than every run's 200.
FUZZ = settings(max_examples=int(os.environ.get("CLUSTERWATCH_FUZZ_EXAMPLES") or 200),
                deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
OTHER_KEY = "osgsub01"
BASE = with_queues(example(), 1)

KEYS = st.one_of(
    st.just(KEY),  # mostly the token's own key, so that the body checks are reached
    st.just(KEY),
    st.sampled_from([OTHER_KEY, "nobody01", "", "a" * 200, "..", "%00", "k\x00y"]),
    st.text(max_size=20).filter(lambda text: "/" not in text),
)
BODIES = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"{}", b"[]", b"null", b"{\"host\": 1}", b"\xef\xbb\xbf{}",
                     json.dumps(BASE).encode()[:-1], json.dumps(BASE).encode() + b"x"]),
)
# Claims larger than the body but under the limit are left to the live-server test: the
# test client's payload asserts instead of answering short, as a real socket would.
CONTENT_LENGTHS = st.sampled_from([None, "", "0", "-1", "abc", "1e9", "99999999999999999999",
                                   "half", " half "])
METHODS = st.sampled_from(["post"] * 6 + ["get", "put", "delete", "head", "options",
                                          "patch"])


class Tokens(dict[str, str]):
    """Tokens by role; shown as a placeholder so no failure report prints a token."""

    def __repr__(self) -> str:
        return f"<tokens {sorted(self)}>"


@pytest.fixture
def keys_and_tokens() -> Tokens:
    return Tokens(own=new_token(KEY), other=new_token(OTHER_KEY),
                  both=new_token(KEY, OTHER_KEY))


def _authorization(choice: str, known: dict[str, str], noise: str) -> dict[str, str]:
    if choice == "none":
        return {}
    if choice == "noise":
        return {"HTTP_AUTHORIZATION": noise}
    scheme, _, which = choice.partition(":")
    return {"HTTP_AUTHORIZATION": f"{scheme} {known[which]}"}


AUTHORIZATIONS = st.sampled_from(["none", "noise", "Token:other"]
                                 + ["Token:own", "Bearer:own", "token:both", "Token:both"] * 3)


def _send(client: Client, method: str, key: str, data: bytes, headers: dict[str, Any]) -> Any:
    path = f"/api/host-reports/{quote(key, safe='')}/"
    before = counts()
    if method == "post":
        response = client.post(path, data, content_type="application/json", **headers)
    else:
        response = getattr(client, method)(path, **headers)
    event(f"{method} {response.status_code}")
    assert response.status_code < 500, (response.status_code, response.content[:300])
    if response.status_code != 201:
        assert counts()[0] == before[0], "a refused request stored a record"
    if response.status_code >= 400 and method != "head" and key and "/" not in key:
        assert "error" in response.json()  # the API's own answer, not a framework page
    return response


@FUZZ
@given(method=METHODS, key=KEYS, body=BODIES, auth=AUTHORIZATIONS,
       noise=st.text(max_size=80), length=CONTENT_LENGTHS)
def test_it_answers_random_requests_without_a_5xx(
        client: Client, keys_and_tokens: dict[str, str], method: str, key: str, body: bytes,
        auth: str, noise: str, length: Any) -> None:
    headers = _authorization(auth, keys_and_tokens, noise)
    if length is not None:
        headers["CONTENT_LENGTH"] = length.replace("half", str(len(body) // 2))
    _send(client, method, key, body, headers)


@FUZZ
@given(changes=mutations_of(BASE), key=st.sampled_from([KEY, OTHER_KEY]),
       auth=AUTHORIZATIONS, collected=st.integers(min_value=0, max_value=10**6))
def test_it_answers_mutated_records_without_a_5xx(
        client: Client, keys_and_tokens: dict[str, str], changes: Any, key: str, auth: str,
        collected: int) -> None:
    record = mutated(BASE, changes)
    if isinstance(record.get("host"), str):
        record["host"] = key  # so that the schema, not the key check, decides most cases
    if record.get("collected_at") == BASE["collected_at"]:
        record["collected_at"] = f"2026-{1 + collected % 12:02d}-{1 + collected % 28:02d}" \
                                 f"T{collected % 24:02d}:{collected % 60:02d}:00Z"
    data = json.dumps(record).encode("utf-8", "surrogatepass")
    response = _send(client, "post", key, data, _authorization(auth, keys_and_tokens, ""))
    if response.status_code in (200, 201):
        # Whatever was stored can be read back.
        read = _send(client, "get", key, b"", _authorization(auth, keys_and_tokens, ""))
        assert read.status_code == 200
