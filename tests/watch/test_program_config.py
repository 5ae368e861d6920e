"""Bad values in the configuration are configuration errors: one line, exit 78, no secret.

Run through the installed console script, as the systemd unit runs it: a value that crashes
later (a timeout no socket takes, a URL no client can use) must be refused at the start.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from clusterwatch.loopback.fake_condor import recorded_argv

from .program import run_watch
from .support import TOKEN, Pool

EXIT_CONFIG = 78


def toml(text: str) -> Callable[[Pool], None]:
    def write(pool: Pool) -> None:
        pool.write_toml(text)
    return write


def toml_bytes(data: bytes) -> Callable[[Pool], None]:
    def write(pool: Pool) -> None:
        (pool.config_dir / "watch.toml").write_bytes(data)
    return write


def not_a_file(make: Callable[[Path], None]) -> Callable[[Pool], None]:
    def write(pool: Pool) -> None:
        make(pool.config_dir / "watch.toml")
    return write


def secret_channel(kind: str, key: str, url: str) -> Callable[[Pool], None]:
    """A channel whose secret file holds `url` (with TOKEN in its path)."""
    def write(pool: Pool) -> None:
        (pool.config_dir / "slack_webhook").unlink()  # the seed file would be unused
        secret = pool.config_dir / "secret_url"
        secret.write_text(url + f"/services/T0/B0/{TOKEN}\n")
        secret.chmod(0o600)
        pool.write_toml(f'[[channels]]\ntype = "{kind}"\n{key} = "secret_url"\n')
    return write


BAD_FILES: dict[str, Callable[[Pool], None]] = {
    "prometheus timeout inf": toml("[prometheus]\ntimeout_s = inf\n"),
    "prometheus timeout 1e300": toml("[prometheus]\ntimeout_s = 1e300\n"),
    "condor timeout 1e300": toml("[condor]\ntimeout_s = 1e300\n"),
    "condor timeout inf": toml("[condor]\ntimeout_s = inf\n"),
    "fail_s inf": toml("[thresholds]\nfail_s = inf\n"),
    "channel timeout inf": toml('[[channels]]\ntype = "alertmanager"\n'
                                'url = "http://127.0.0.1:9093"\ntimeout_s = inf\n'),
    "non-UTF-8 byte": toml_bytes(b'[prometheus]\njob = "n\xffde"\n'),
    "watch.toml a FIFO": not_a_file(os.mkfifo),  # reading it would wait for a writer
    "watch.toml a directory": not_a_file(Path.mkdir),
    "alertmanager port 99999": toml('[[channels]]\ntype = "alertmanager"\n'
                                    'url = "http://127.0.0.1:99999"\n'),
    "alertmanager not a URL": toml('[[channels]]\ntype = "alertmanager"\n'
                                   'url = "127.0.0.1:9093"\n'),
    "prometheus url broken IPv6 host": toml('[prometheus]\nurl = "http://[::1"\n'),
}

# Secret files are read only by the verb that sends: the poll.
BAD_SECRETS: dict[str, Callable[[Pool], None]] = {
    "slack webhook port 99999": secret_channel("slack", "webhook_file",
                                               "https://hooks.example.org:99999"),
    "webhook port 99999": secret_channel("webhook", "url_file", "http://127.0.0.1:99999"),
    "webhook port 0": secret_channel("webhook", "url_file", "http://127.0.0.1:0"),
    "webhook broken IPv6 host": secret_channel("webhook", "url_file", "http://[::1"),
    "webhook without host": secret_channel("webhook", "url_file", "http://:8080"),
}


def assert_config_error(pool: Pool, done_stderr: str, returncode: int,
                        stdout: str) -> None:
    assert returncode == EXIT_CONFIG, done_stderr
    assert stdout == ""
    assert done_stderr.startswith("clusterwatch: configuration error: ")
    assert len(done_stderr.splitlines()) == 1, done_stderr
    assert TOKEN not in done_stderr
    assert recorded_argv(pool.bin_dir) == [] and pool.prometheus.queries == []


@pytest.mark.parametrize("verb", [(), ("status",), ("discover",)], ids=["poll", "status",
                                                                        "discover"])
@pytest.mark.parametrize("setup", list(BAD_FILES.values()), ids=list(BAD_FILES))
def test_it_exits_78_on_one_line_for_a_bad_value_in_the_files(
    pool: Pool, setup: Callable[[Pool], None], verb: tuple[str, ...]
) -> None:
    setup(pool)
    done = run_watch(pool, *verb)
    assert_config_error(pool, done.stderr, done.returncode, done.stdout)


@pytest.mark.parametrize("setup", list(BAD_SECRETS.values()), ids=list(BAD_SECRETS))
def test_it_exits_78_on_one_line_for_an_unusable_url_in_a_secret_file(
    pool: Pool, setup: Callable[[Pool], None]
) -> None:
    setup(pool)
    done = run_watch(pool)
    assert_config_error(pool, done.stderr, done.returncode, done.stdout)
    assert "secret_url" in done.stderr


@pytest.mark.parametrize("url", ["http://[::1", "127.0.0.1:9090", "http://127.0.0.1:99999",
                                 "http://127.0.0.1:port", "http://", "ftp://127.0.0.1"])
def test_it_exits_78_on_one_line_for_a_malformed_prometheus_url_option(
    pool: Pool, url: str
) -> None:
    done = run_watch(pool, prometheus_url=url)
    assert_config_error(pool, done.stderr, done.returncode, done.stdout)
    assert "--prometheus-url" in done.stderr


def test_it_still_takes_the_largest_allowed_values(pool: Pool) -> None:
    pool.write_toml("[prometheus]\ntimeout_s = 3600\n[condor]\ntimeout_s = 3600\n")
    done = run_watch(pool)
    assert done.returncode == 0, done.stderr
