"""Silences and maintenance windows end to end: the installed console script against the
loopback condor_status and Prometheus and a real SMTP server (aiosmtpd) as the only channel.

A silenced stale GPU file raises no message until its silence is expired, then exactly one,
while the unsilenced one alerts at once, and a mail server down when the held alert is
released loses nothing and duplicates nothing; a maintenance window holds a node's alert and
releases it when it closes, the node still missing; bad matchers and durations are usage
errors (exit 2, one line, the state file unchanged); `silence add` waits for a running poll's
lock and loses neither write.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.watch import state

from .program import Run, child_env, console_script, pool_args, run_watch
from .support import Pool

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"
EXIT_USAGE, EXIT_CONFIG = 2, 78
Servers = Callable[..., SmtpServer]


def mail_toml(server: SmtpServer, extra: str = "") -> str:
    return (f'[[channels]]\ntype = "email"\nname = "mail"\nsmtp_host = "127.0.0.1"\n'
            f'smtp_port = {server.port}\nsecurity = "none"\n'
            f'from = "Pool watch <watch@example.org>"\nto = ["ops@example.org"]\n'
            f"timeout_s = 5\n{extra}")


@pytest.fixture
def mailed(pool: Pool, smtp_servers: Servers) -> SmtpServer:
    """The pool, its only channel email to a plain loopback SMTP server."""
    server = smtp_servers(security="none")
    (pool.config_dir / "slack_webhook").unlink()
    pool.write_toml(mail_toml(server))
    return server


def mail_lines(server: SmtpServer) -> list[str]:
    """The event lines of every received message, in order."""
    lines: list[str] = []
    for message in server.messages:
        body = message.get_body(preferencelist=("plain",))
        assert body is not None
        text = str(body.get_content()).replace("\r\n", "\n").split("\n\n-- \n")[0]
        lines += text.splitlines()
    return lines


def status(pool: Pool) -> dict[str, Any]:
    done = run_watch(pool, "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def silence(pool: Pool, *args: str) -> Run:
    return run_watch(pool, "silence", *args)


def wait_until(moment: float) -> None:
    """Let the wall clock pass `moment` (the console script reads the real clock)."""
    while time.time() < moment:
        time.sleep(min(0.05, max(0.0, moment - time.time())))


def test_a_silenced_stale_file_sends_nothing_until_its_silence_is_expired_then_once(
    pool: Pool, mailed: SmtpServer,
) -> None:
    now = time.time()
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({G1: now - 2000, G2: now - 2000}, now)
    added = silence(pool, "add", f"gpu:{G1}", "--for", "2h", "--comment", "swapping the card",
                    "--author", "alice")
    assert added.returncode == 0, added.stderr
    ident = added.stdout.splitlines()[-1]
    assert len(ident) == 12 and f"gpu:{G1}" in added.stdout.splitlines()[0]

    first = run_watch(pool)
    assert first.returncode == 0, first.stderr
    assert f"ALERT gpu:{G2} (stale)" in first.stdout and G1 not in first.stdout
    assert len(mailed.messages) == 1 and G1 not in "".join(mail_lines(mailed))
    shown = status(pool)
    held = {item["target"]: item for item in shown["open_incidents"]}
    assert held[f"gpu:{G1}"]["held"] is True and held[f"gpu:{G2}"]["held"] is False
    assert held[f"gpu:{G1}"]["held_by"] == f"silence {ident}"
    assert [s["id"] for s in shown["silences"]] == [ident]
    text = run_watch(pool, "status").stdout
    assert f"gpu:{G1} (stale)" in text and "HELD, silenced by alice until " in text, text

    assert run_watch(pool).stdout == "" and len(mailed.messages) == 1  # still held

    expired = silence(pool, "expire", ident)
    assert expired.returncode == 0, expired.stderr
    mailed.down()  # and the mail server is down when the released alert is due
    released = run_watch(pool)
    assert released.returncode == 0, released.stderr
    assert f"ALERT gpu:{G1} (stale)" in released.stdout
    pending = status(pool)["channels"]["mail"]["pending"]
    assert [event["target"] for event in pending] == [f"gpu:{G1}"]
    assert run_watch(pool).stdout == ""  # queued once, not again while it waits
    mailed.up()
    assert run_watch(pool).stdout == ""  # delivered from the queue
    assert run_watch(pool).stdout == ""
    assert status(pool)["channels"]["mail"]["pending"] == []
    lines = mail_lines(mailed)
    assert [line.split(" ", 3)[2:3] for line in lines] == [["ALERT"], ["ALERT"]], lines
    assert lines[1].startswith(time.strftime("%Y-%m-%d", time.gmtime(now)))
    assert lines[1].endswith(f"incident {held[f'gpu:{G1}']['incident']}")
    assert f"ALERT gpu:{G1} (stale)" in lines[1] and f"ALERT gpu:{G2} (stale)" in lines[0]
    listed = json.loads(silence(pool, "list", "--json").stdout)
    assert [(item["id"], item["state"]) for item in listed] == [(ident, "expired")]


def test_a_maintenance_window_holds_a_nodes_alert_and_releases_it_when_it_closes(
    pool: Pool, mailed: SmtpServer,
) -> None:
    start = time.time()
    end = start + 8
    stamp = dt.datetime.fromtimestamp(end, dt.timezone.utc).isoformat()
    opened = dt.datetime.fromtimestamp(start - 60, dt.timezone.utc).isoformat()
    pool.write_toml(mail_toml(mailed, (
        "[thresholds]\nfail_s = 1\nfresh_s = 0.5\n"
        f'[[maintenance]]\ncomment = "PDU swap"\nmatchers = ["node:worker2*"]\n'
        f'start = "{opened}"\nend = "{stamp}"\n')))
    pool.set_inventory([W1, W2], [])
    pool.set_machines([W1])

    first = run_watch(pool)  # worker2's absence starts
    assert first.returncode == 0 and first.stdout == "", first.stderr
    wait_until(start + 1.5)
    second = run_watch(pool)  # a second of absence: the alert, held
    assert second.returncode == 0 and second.stdout == "", second.stderr
    assert "held back: ALERT node:worker2.example.org (missing)" in second.stderr
    assert time.time() < end, "the poll took too long: the window closed before the test"
    incident = {item["target"]: item for item in status(pool)["open_incidents"]}[f"node:{W2}"]
    assert incident["held"] is True
    assert incident["held_by"] == "maintenance window 'PDU swap'"
    text = run_watch(pool, "status").stdout
    assert "maintenance windows open: 1" in text and "HELD, in maintenance until" in text
    assert mailed.messages == []

    wait_until(end)
    third = run_watch(pool)  # closed, worker2 still missing: the alert goes out
    assert third.returncode == 0, third.stderr
    assert third.stdout.splitlines() == [
        line for line in third.stdout.splitlines() if f"ALERT node:{W2} (missing)" in line]
    assert len(third.stdout.splitlines()) == 1
    assert run_watch(pool).stdout == ""
    lines = mail_lines(mailed)
    assert len(lines) == 1 and lines[0].endswith(f"incident {incident['incident']}")
    assert status(pool)["maintenance"] == []


BAD_ADDS = {
    "no kind": (["wn1*", "--for", "2h"], "is not KIND:PATTERN"),
    "an unknown kind": (["host:wn1*", "--for", "2h"], "unknown kind 'host'"),
    "an empty pattern": (["node:", "--for", "2h"], "empty pattern"),
    "a zero duration": (["node:wn1*", "--for", "0m"], "not positive"),
    "a negative duration": (["node:wn1*", "--for=-5m"], "is not like 90m"),
    "a negative duration, read as an option": (["node:wn1*", "--for", "-5m"],
                                               "argument --for: expected one argument"),
    "a unit it does not know": (["node:wn1*", "--for", "2y"], "is not like 90m"),
    "too long": (["node:wn1*", "--for", "400d"], "longer than 366 days"),
    "both --for and --until": (["node:wn1*", "--for", "2h", "--until", "2099-01-01T00:00Z"],
                               "exactly one of --for"),
    "neither --for nor --until": (["node:wn1*"], "exactly one of --for"),
    "a time without a zone": (["node:wn1*", "--until", "2099-01-01T00:00"], "has no zone"),
    "a time in the past": (["node:wn1*", "--until", "2000-01-01T00:00Z"], "already have ended"),
    "no matcher": (["--for", "2h"], "at least one MATCHER"),
}


@pytest.mark.parametrize(("args", "message"), list(BAD_ADDS.values()), ids=list(BAD_ADDS))
def test_a_bad_silence_is_a_usage_error_and_stores_nothing(pool: Pool, args: list[str],
                                                           message: str) -> None:
    assert silence(pool, "add", "node:keep*", "--for", "1h", "--comment", "kept").returncode == 0
    before = (pool.state_dir / state.STATE_FILE).read_bytes()
    done = silence(pool, "add", *args, "--comment", "reboot")
    assert done.returncode == EXIT_USAGE and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr
    assert (pool.state_dir / state.STATE_FILE).read_bytes() == before


def test_an_unknown_option_is_a_usage_error_and_stores_nothing(pool: Pool) -> None:
    # The top-level parser finds it (its usage line first): still exit 2, nothing stored.
    done = silence(pool, "add", "node:wn1*", "--for", "2h", "--comment", "x", "--silent")
    assert done.returncode == EXIT_USAGE and done.stdout == ""
    assert done.stderr.splitlines()[-1].endswith("unrecognized arguments: --silent")
    assert not (pool.state_dir / state.STATE_FILE).exists()


@pytest.mark.parametrize("comment", [None, "", "   "], ids=["missing", "empty", "blank"])
def test_a_silence_without_a_comment_is_a_usage_error(pool: Pool,
                                                      comment: Optional[str]) -> None:
    extra = [] if comment is None else ["--comment", comment]
    done = silence(pool, "add", "node:wn1*", "--for", "2h", *extra)
    assert done.returncode == EXIT_USAGE and "needs a comment" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert not (pool.state_dir / state.STATE_FILE).exists()


def test_expiring_an_unknown_id_is_a_usage_error_and_expiring_twice_is_not(pool: Pool) -> None:
    day = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=30)).date()
    until = dt.datetime.combine(day, dt.time(8, 0), dt.timezone(dt.timedelta(hours=1)))
    added = silence(pool, "add", "node:wn1*", "--until", until.isoformat(),
                    "--comment", "decommissioning")
    assert added.returncode == 0, added.stderr
    ident = added.stdout.splitlines()[-1]
    unknown = silence(pool, "expire", "0123456789ab")
    assert unknown.returncode == EXIT_USAGE and "no silence with id" in unknown.stderr
    assert len(unknown.stderr.splitlines()) == 1
    listed = json.loads(silence(pool, "list", "--json").stdout)
    assert listed[0]["state"] == "active" and listed[0]["until"] == until.timestamp()
    assert listed[0]["author"]  # the login name by default
    assert silence(pool, "expire", ident).returncode == 0
    again = silence(pool, "expire", ident)
    assert again.returncode == 0 and "had already ended" in again.stdout
    text = silence(pool, "list").stdout
    assert text.startswith(f"{ident}  expired ") and "node:wn1*" in text, text
    assert silence(pool).returncode == EXIT_USAGE  # no action


def test_a_silence_that_matches_no_expected_target_is_stored_with_a_warning(
    pool: Pool,
) -> None:
    typo = silence(pool, "add", "node:worker1", "--for", "1h", "--comment", "typo")
    assert typo.returncode == 0 and len(typo.stdout.splitlines()) == 2
    assert "matches none of the 4 expected targets" in typo.stderr
    right = silence(pool, "add", "node:worker1*", "--for", "1h", "--comment", "right")
    assert right.returncode == 0 and right.stderr == ""
    stored = state.load(pool.state_dir, repair=False).silences
    assert [s.id for s in stored] == [typo.stdout.splitlines()[-1],
                                      right.stdout.splitlines()[-1]]


def test_a_bad_maintenance_table_exits_78_in_one_line(pool: Pool) -> None:
    pool.write_toml('[[maintenance]]\ncomment = "x"\nmatchers = ["node:a"]\nday = "fri"\n'
                    'time = "25:00"\nduration = "1h"\n')
    for verb in ((), ("status",), ("silence", "list")):
        done = run_watch(pool, *verb)
        assert done.returncode == EXIT_CONFIG, done.stderr
        assert done.stderr.startswith("clusterwatch: configuration error: maintenance[0].time")
        assert len(done.stderr.splitlines()) == 1


def test_silence_add_waits_for_the_polls_lock_and_keeps_both_writes(pool: Pool) -> None:
    argv = [str(console_script()), "watch", *pool_args(pool), "silence", "add", "node:wn1*",
            "--for", "1h", "--comment", "waits"]
    with state.locked(pool.state_dir):  # as a running poll holds it
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=child_env(pool.root))
        try:
            lock = (pool.state_dir / state.LOCK_FILE).resolve()
            deadline = time.monotonic() + 30
            while not _holds_open(child.pid, lock):  # it is waiting at the lock now
                assert child.poll() is None and time.monotonic() < deadline, \
                    "silence add never reached the lock"
                time.sleep(0.01)
            # The poll's write, while the command waits: it must read this, not lose it.
            kept = state.load(pool.state_dir)
            kept.last_poll = {"t": 1.0}
            state.save(pool.state_dir, kept)
            assert child.poll() is None
        except BaseException:
            child.kill()
            raise
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    final = state.load(pool.state_dir, repair=False)
    assert final.last_poll == {"t": 1.0}
    assert [s.id for s in final.silences] == [out.splitlines()[-1]]


def _holds_open(pid: int, path: Path) -> bool:
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") == str(path):
                return True
        except OSError:
            continue
    return False
