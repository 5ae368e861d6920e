"""Host tokens: their form, hashing at rest, and the create/revoke/list commands."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from clusterwatch.monitor.core.models import HostToken, HostTokenKey
from clusterwatch.monitor.ingest import tokens
from tests.monitor.ingest.support import auth, post
from tests.monitor.records import KEY, example

pytestmark = pytest.mark.django_db


def _run(*args: str, stdin: str = "") -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        call_command(*args, stdout=out, stderr=err)
    finally:
        sys.stdin = old_stdin
    return out.getvalue(), err.getvalue()


def _create(*keys: str, note: str = "") -> tuple[str, list[str]]:
    out, _ = _run("create_host_token", *keys, *(["--note", note] if note else []))
    lines = out.splitlines()
    return lines[-1], lines[:-1]


def test_it_makes_random_tokens_of_the_documented_form() -> None:
    made = {tokens.generate()[0] for _ in range(50)}
    assert len(made) == 50
    for token in made:
        assert tokens.TOKEN_RE.fullmatch(token)
        assert len(token) == 4 + 8 + 1 + 43
        assert tokens.prefix_of(token) == token[:12]


@pytest.mark.parametrize(("header", "found"), [
    ("Token {t}", True), ("Bearer {t}", True), ("bearer   {t}", True), ("  Token {t}  ", True),
    ("Basic {t}", False), ("Token", False), ("{t}", False), ("Token {t} more", False),
    ("Token {t}x", False), ("", False),
])
def test_it_reads_the_token_from_the_authorization_header(header: str, found: bool) -> None:
    token, _ = tokens.generate()
    assert tokens.from_header(header.format(t=token)) == (token if found else None)


def test_it_prints_the_token_as_the_last_line_and_explains_it_before() -> None:
    token, before = _create(KEY, "osgsub01", note="BNL harvester")
    assert tokens.TOKEN_RE.fullmatch(token)
    text = "\n".join(before)
    assert "pandaharvester01, osgsub01" in text
    assert token[:12] in text and "shown only this once" in text
    assert token not in text
    row = HostToken.objects.get()
    assert row.prefix == token[:12] and row.note == "BNL harvester"
    assert tokens.keys_of(row) == ["osgsub01", KEY]


def test_it_keeps_no_token_text_anywhere_in_the_database() -> None:
    token, _ = _create(KEY)
    secret = token[13:]
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            columns = [column.name for column in
                       connection.introspection.get_table_description(cursor, table)]
            cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 (names from the schema)
            for row in cursor.fetchall():
                for column, value in zip(columns, row):
                    assert secret not in str(value), f"{table}.{column}"
                    assert token not in str(value), f"{table}.{column}"
    row = HostToken.objects.get()
    assert row.digest == tokens.digest(token) and len(row.digest) == 64


def test_it_authenticates_only_the_exact_token() -> None:
    token, _ = _create(KEY)
    assert tokens.authenticate(token) == HostToken.objects.get()
    assert tokens.authenticate(token[:-1] + ("a" if token[-1] != "a" else "b")) is None
    assert tokens.authenticate("cwh_AAAAAAAA_" + "a" * 43) is None
    assert tokens.authenticate("nonsense") is None


def _fields(row: HostToken) -> list[tuple[str, Any, type]]:
    return [(field.name, getattr(row, field.attname), type(getattr(row, field.attname)))
            for field in HostToken._meta.concrete_fields]


def test_its_one_statement_reads_the_row_the_orm_reads_and_the_binding() -> None:
    token, _ = _create(KEY, "osgsub01", note="é note")
    other, _ = _create("x01")
    row, bound = tokens.authenticate_for(token, KEY)
    orm = HostToken.objects.get(prefix=token[:12])
    assert row is not None and bound
    assert _fields(row) == _fields(orm)  # types too: aware datetimes on SQLite as well
    assert row.created_at.tzinfo is not None and not row.get_deferred_fields()
    assert (row._state.adding, row._state.db) == (orm._state.adding, orm._state.db)
    assert tokens.authenticate_for(token, "osgsub01")[1]
    assert tokens.authenticate_for(token, "x01") == (orm, False)  # another token's key
    assert tokens.authenticate_for(token, "nobody01") == (orm, False)
    assert tokens.authenticate_for(token, "") == (orm, False)
    assert tokens.authenticate_for(other, "x01")[1]
    tokens.revoke(orm)
    assert tokens.authenticate_for(token, KEY) == (None, False)
    revoked = HostToken.objects.get(prefix=token[:12])
    assert revoked.revoked_at is not None and revoked.revoked_at.tzinfo is not None
    assert tokens.authenticate_for(token[:-1] + ("a" if token[-1] != "a" else "b"),
                                   "x01") == (None, False)
    assert tokens.authenticate_for("nonsense", KEY) == (None, False)


@pytest.mark.parametrize("name", ["a%00b", "%00", "x" * 300, "a%FFb"])
def test_a_name_that_is_no_key_is_401_or_404_on_every_database(client: Client,
                                                                name: str) -> None:
    token, _ = _create(KEY)
    unknown = "cwh_AAAAAAAA_" + "A" * 43  # well formed, no such token
    for method in (client.get, client.post):
        for text, status, error in ((token, 404, "unknown_key"), (unknown, 401, "token")):
            answer = method(f"/api/host-reports/{name}/", **auth(text))
            assert (answer.status_code, answer.json()["error"]) == (status, error)


def test_it_lets_a_token_write_every_key_it_was_made_for(client: Client) -> None:
    token, _ = _create(KEY, "osgsub01")
    for key in (KEY, "osgsub01"):
        assert post(client, token, example(key=key), key=key).status_code == 201
    HostTokenKey.objects.create(token=HostToken.objects.create(prefix="cwh_zzzzzzzz",
                                                               digest="0" * 64), key="x01")
    assert post(client, token, example(key="x01"), key="x01").status_code == 403


def test_it_makes_one_token_per_call_even_for_the_same_keys() -> None:
    first, _ = _create(KEY)
    second, _ = _create(KEY)
    assert first != second and HostToken.objects.count() == 2


def test_it_names_the_key_it_refuses() -> None:
    with pytest.raises(CommandError, match="not a valid key: 'bad/key'"):
        _run("create_host_token", KEY, "bad/key")
    with pytest.raises(CommandError, match="at most 200"):
        _run("create_host_token", KEY, "--note", "n" * 201)
    assert HostToken.objects.count() == 0


def test_it_revokes_by_prefix_and_the_token_stops_working(client: Client) -> None:
    token, _ = _create(KEY)
    assert post(client, token, example()).status_code == 201
    out, _ = _run("revoke_host_token", token[:12])
    assert f"revoked {token[:12]}" in out and KEY in out
    assert HostToken.objects.get().revoked_at is not None
    assert post(client, token, example()).status_code == 401
    again, _ = _run("revoke_host_token", token[4:12])  # without cwh_ works too
    assert "already revoked" in again


def test_it_revokes_with_the_whole_token_read_from_stdin() -> None:
    token, _ = _create(KEY)
    out, _ = _run("revoke_host_token", "--stdin", stdin=token + "\n")
    assert f"revoked {token[:12]}" in out and token not in out
    assert HostToken.objects.get().revoked_at is not None


def test_it_refuses_a_wrong_secret_on_stdin() -> None:
    token, _ = _create(KEY)
    forged = token[:13] + ("A" if token[13] != "A" else "B") + token[14:]
    with pytest.raises(CommandError, match="no such token") as raised:
        _run("revoke_host_token", "--stdin", stdin=forged)
    assert forged not in str(raised.value)
    assert HostToken.objects.get().revoked_at is None


def test_it_refuses_a_whole_token_on_the_command_line_without_repeating_it() -> None:
    token, _ = _create(KEY)
    with pytest.raises(CommandError, match="whole token") as raised:
        _run("revoke_host_token", token)
    assert token[13:] not in str(raised.value)
    assert HostToken.objects.get().revoked_at is None


@pytest.mark.parametrize(("args", "message"), [
    ((), "either a PREFIX or --stdin"),
    (("cwh_AAAAAAAA", "--stdin"), "either a PREFIX or --stdin"),
    (("cwh_AAAAAAAA",), "no token has the prefix cwh_AAAAAAAA"),
    (("nonsense!",), "not a token prefix"),
])
def test_it_explains_a_revocation_it_cannot_do(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        _run("revoke_host_token", *args)


def test_it_lists_tokens_without_their_secrets() -> None:
    kept, _ = _create(KEY, "osgsub01", note="BNL")
    gone, _ = _create("old01")
    _run("revoke_host_token", gone[:12])
    out, _ = _run("list_host_tokens")
    lines = out.splitlines()
    assert lines[0].split() == ["PREFIX", "CREATED", "REVOKED", "KEYS", "NOTE"]
    kept_line = next(line for line in lines if kept[:12] in line)
    gone_line = next(line for line in lines if gone[:12] in line)
    assert "osgsub01, pandaharvester01" in kept_line and "BNL" in kept_line
    assert " - " in kept_line and "Z" in gone_line.split(gone[:12])[1]
    for row in HostToken.objects.all():
        assert row.digest not in out
    assert kept[13:] not in out and gone[13:] not in out
    active, _ = _run("list_host_tokens", "--active")
    assert kept[:12] in active and gone[:12] not in active


def test_it_works_through_the_clusterwatch_command(tmp_path: Path) -> None:
    """The documented way: `clusterwatch monitor create_host_token ... | tail -n 1`."""
    env = {**os.environ, "CLUSTERWATCH_DATA_DIR": str(tmp_path),
           "CLUSTERWATCH_DATABASE_URL": f"sqlite:///{tmp_path / 'monitor.sqlite3'}"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    command = [sys.executable, "-m", "clusterwatch", "monitor"]

    def run(*args: str, stdin: str = "") -> Any:
        return subprocess.run([*command, *args], env=env, input=stdin, capture_output=True,
                              text=True, timeout=120)

    assert run("migrate", "--verbosity", "0").returncode == 0
    made = run("create_host_token", KEY, "osgsub01")
    assert made.returncode == 0, made.stderr
    token = made.stdout.splitlines()[-1]
    assert tokens.TOKEN_RE.fullmatch(token)
    assert token not in made.stderr
    revoked = run("revoke_host_token", "--stdin", stdin=token)
    assert revoked.returncode == 0 and token[:12] in revoked.stdout
    refused = run("create_host_token", "no/slash")
    assert refused.returncode != 0 and "not a valid key" in refused.stderr
