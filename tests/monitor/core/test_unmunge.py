"""Reading unmunge (clusterwatch.monitor.core.unmunge): its exit statuses and `--numeric`
metadata as unmunge(1) documents them, and running it: the credential on stdin and never in
argv, a deadline that holds against a program that hangs, a missing program. The stand-ins
print what the real unmunge printed for each case (tests/monitor/usage/test_munge_auth.py
holds the same statuses against a real munged)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from clusterwatch.monitor.core.unmunge import (
    REFUSED,
    UNAVAILABLE,
    CredentialRefused,
    Decoded,
    MungeUnavailable,
    decode,
    parse_metadata,
    read_answer,
)

CREDENTIAL = "MUNGE:AwQFAAD7khBTVmHDTkiO0YmrLJu9ZfKspMbD286IIftTkghdKjOIAlI+J0vAqK=:"


def metadata(status: int = 0, uid: int = 1001, gid: int = 1001, length: int = 0) -> bytes:
    """unmunge --numeric's stdout, as munge 0.5.15 prints it."""
    return (f"STATUS:          {status}\nENCODE_HOST:     127.0.0.1\n"
            f"ENCODE_TIME:     1796419071\nDECODE_TIME:     1796419071\nTTL:             300\n"
            f"CIPHER:          4\nMAC:             5\nZIP:             0\n"
            f"UID:             {uid}\nGID:             {gid}\nLENGTH:          {length}\n\n"
            ).encode()


def test_a_valid_credential_gives_its_uid_and_gid() -> None:
    assert read_answer(0, metadata(uid=999, gid=995)) == Decoded(uid=999, gid=995)
    assert parse_metadata(metadata())["TTL"] == "300"


@pytest.mark.parametrize(("status", "words"), [
    (15, "expired"), (16, "rewound"), (17, "replayed"), (14, "invalid: not encoded with "
                                                             "this cluster's MUNGE key"),
    (18, "unauthorized"), (8, "invalid format"), (13, "realm"), (99, "unmunge status 99")])
def test_each_status_about_the_credential_refuses_it_in_one_line(status: int,
                                                                 words: str) -> None:
    # unmunge prints a replayed or expired credential's metadata, UID and all: never used.
    with pytest.raises(CredentialRefused) as refused:
        read_answer(status, metadata(status=status, uid=0))
    message = str(refused.value)
    assert message.startswith("MUNGE credential refused") and words in message
    assert "\n" not in message


@pytest.mark.parametrize("status", sorted(UNAVAILABLE))
def test_a_status_about_this_host_is_unavailable_not_a_refusal(status: int) -> None:
    with pytest.raises(MungeUnavailable, match=rf"\(unmunge status {status}\)$"):
        read_answer(status, b"")


def test_every_documented_status_but_success_has_a_reading() -> None:
    assert sorted({*REFUSED, *UNAVAILABLE}) == list(range(1, 19))


def test_the_exit_status_and_the_status_line_must_both_say_success() -> None:
    with pytest.raises(CredentialRefused, match="replayed"):
        read_answer(0, metadata(status=17))
    with pytest.raises(CredentialRefused, match="expired"):
        read_answer(15, metadata(status=0))
    with pytest.raises(MungeUnavailable, match="could not be read"):
        read_answer(0, b"STATUS: Success\n")
    with pytest.raises(MungeUnavailable, match="killed by signal 9"):
        read_answer(-9, metadata())


@pytest.mark.parametrize("answer", [
    b"", b"STATUS: 0\n", metadata().replace(b"UID:             1001", b"UID: -1"),
    metadata().replace(b"GID:             1001", b"GID: \xd9\xa1"),  # an Arabic-Indic one
    b"\n" + metadata()])  # a blank line first: all the rest is payload
def test_an_answer_without_a_uid_gid_and_length_proves_nothing(answer: bytes) -> None:
    with pytest.raises(MungeUnavailable, match="could not be read"):
        read_answer(0, answer)


def test_a_credential_with_a_payload_is_refused() -> None:
    with pytest.raises(CredentialRefused, match="carries a payload"):
        read_answer(0, metadata(length=5) + b"hello")


def stand_in(tmp_path: Path, body: str) -> Path:
    program = tmp_path / "unmunge"
    program.write_text("#!/bin/sh\n" + body)
    program.chmod(0o755)
    return program


def test_it_sends_the_credential_on_stdin_never_in_argv(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    program = stand_in(tmp_path, f'echo "$@" > {seen}.argv; cat > {seen}.stdin\n'
                                 f"printf '{metadata(uid=42).decode()}'\n")
    found = decode(CREDENTIAL, program=str(program), socket="/run/m/sock", timeout_s=5)
    assert found == Decoded(uid=42, gid=1001)
    argv = Path(f"{seen}.argv").read_text()
    assert CREDENTIAL not in argv and "--socket=/run/m/sock" in argv and "--numeric" in argv
    assert Path(f"{seen}.stdin").read_text().strip() == CREDENTIAL


def test_its_environment_is_path_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERWATCH_SECRET_KEY", "not for unmunge")
    seen = tmp_path / "env"
    program = stand_in(tmp_path, f"env > {seen}\nprintf '{metadata().decode()}'\n")
    decode(CREDENTIAL, program=str(program))
    names = {line.partition("=")[0] for line in seen.read_text().splitlines()}
    assert "CLUSTERWATCH_SECRET_KEY" not in names and "PATH" in names


def test_a_missing_or_unrunnable_program_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(MungeUnavailable, match="not installed here"):
        decode(CREDENTIAL, program=str(tmp_path / "nowhere"))
    plain = tmp_path / "plain"
    plain.write_text("not a program")
    with pytest.raises(MungeUnavailable, match="not executable"):
        decode(CREDENTIAL, program=str(plain))


def test_a_program_that_exits_without_reading_is_read_by_its_status(tmp_path: Path) -> None:
    program = stand_in(tmp_path, "exit 6\n")
    with pytest.raises(MungeUnavailable, match="munged is not running"):
        decode(CREDENTIAL, program=str(program))


def test_a_hanging_program_is_given_up_at_the_deadline_children_and_all(
        tmp_path: Path) -> None:
    # Its child keeps stdout open: killing the group ends both, so the wait ends too.
    program = stand_in(tmp_path, "sleep 60 &\nsleep 60\n")
    started = time.monotonic()
    with pytest.raises(MungeUnavailable, match=r"no answer within 0\.3 s"):
        decode(CREDENTIAL, program=str(program), timeout_s=0.3)
    assert time.monotonic() - started < 3
