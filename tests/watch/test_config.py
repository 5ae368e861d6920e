"""Watch configuration through the real CLI: seed layout, inventories, secrets, watch.toml."""

from __future__ import annotations

import json
import logging
import shutil
import stat
import time
from pathlib import Path

import pytest

from clusterwatch.loopback.fake_condor import recorded_argv, write_fake_condor_status
from clusterwatch.loopback.fake_prometheus import error_response
from clusterwatch.loopback.http_recorder import HttpRecorder
from clusterwatch.watch import state

from .support import TOKEN, Pool, cli

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"
EXIT_CONFIG = 78


def pool_args(pool: Pool, *, config_dir: bool = True, state_dir: bool = True,
              prometheus: bool = True, condor: bool = True) -> list[str]:
    args = ["watch"]
    if config_dir:
        args += ["--config-dir", str(pool.config_dir)]
    if state_dir:
        args += ["--state-dir", str(pool.state_dir)]
    if prometheus:
        args += ["--prometheus-url", pool.prometheus.url]
    if condor:
        args += ["--condor-status", str(pool.condor_status)]
    return args


def stale_gpu(pool: Pool) -> float:
    """Every node present, G1's file 2000 s old (alerts on the first poll), G2 fresh."""
    now = time.time()
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({G1: now - 2000, G2: now - 20}, now)
    return now


def watched(pool: Pool) -> tuple[int, int]:
    """(nodes, GPU workers) the last poll watched, as its summary counts them."""
    summary = state.load(pool.state_dir).last_poll
    return summary["nodes"], summary["gpus"]


def secret_webhook(pool: Pool, path: Path, content: str | None = None, mode: int = 0o600) -> str:
    url = f"{pool.slack.url}/services/T0CWTEST/B0CWTEST/{TOKEN}"
    path.write_text(content if content is not None else url + "\n")
    path.chmod(mode)
    return url


def no_query_made(pool: Pool) -> bool:
    return recorded_argv(pool.bin_dir) == [] and pool.prometheus.queries == []


def dead_port() -> str:
    with HttpRecorder() as server:
        url = server.url
    return url  # nothing listens there any more


# --- the seed-compatible layout -------------------------------------------------------------

def test_it_uses_the_seed_layout_under_home_by_default(pool: Pool, tmp_path: Path,
                                                       monkeypatch, capsys) -> None:
    home = tmp_path / "home"
    shutil.copytree(pool.config_dir, home / ".config" / "htcondor-watch")  # keeps mode 600
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    stale_gpu(pool)
    status, out, _ = cli(capsys, *pool_args(pool, config_dir=False, state_dir=False))
    assert status == 0
    assert f"ALERT gpu:{G1} (stale)" in out
    state_dir = home / ".local" / "state" / "htcondor-watch"
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((state_dir / "state.json").stat().st_mode) == 0o600
    assert not pool.state_dir.exists()
    # ~/.config/htcondor-watch/slack_webhook was read: the alert went to Slack
    assert f"ALERT gpu:{G1} (stale)" in pool.slack.requests[0].json()["text"]
    status, out, _ = cli(capsys, "watch", "status")
    assert status == 0 and "open incidents: 1" in out and f"gpu:{G1} (stale)" in out


def test_it_respects_xdg_config_home_and_xdg_state_home(pool: Pool, tmp_path: Path,
                                                        monkeypatch, capsys) -> None:
    shutil.copytree(pool.config_dir, tmp_path / "xdg-config" / "htcondor-watch")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    stale_gpu(pool)
    status, out, _ = cli(capsys, *pool_args(pool, config_dir=False, state_dir=False))
    assert status == 0 and f"ALERT gpu:{G1} (stale)" in out
    assert (tmp_path / "xdg-state" / "htcondor-watch" / "state.json").is_file()
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("value", ["", "relative/config"])
def test_it_falls_back_to_home_for_an_empty_or_relative_xdg_variable(
    pool: Pool, tmp_path: Path, monkeypatch, capsys, value: str
) -> None:
    home = tmp_path / "home"
    shutil.copytree(pool.config_dir, home / ".config" / "htcondor-watch")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", value)
    monkeypatch.setenv("XDG_STATE_HOME", value)
    status, _, err = cli(capsys, *pool_args(pool, config_dir=False, state_dir=False))
    assert status == 0, err
    assert (home / ".local" / "state" / "htcondor-watch" / "state.json").is_file()
    assert not (tmp_path / "relative").exists()


def test_it_exits_78_when_the_config_dir_is_missing(pool: Pool, tmp_path: Path,
                                                    capsys) -> None:
    missing = tmp_path / "nowhere"
    status, out, err = cli(capsys, "watch", "--config-dir", str(missing),
                           "--state-dir", str(pool.state_dir))
    assert status == EXIT_CONFIG
    assert out == ""
    assert str(missing) in err and "does not exist" in err
    assert not pool.state_dir.exists()


def test_it_names_the_default_config_dir_when_it_is_missing(tmp_path: Path, monkeypatch,
                                                            capsys) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    status, out, err = cli(capsys, "watch")
    assert status == EXIT_CONFIG and out == ""
    assert str(tmp_path / ".config" / "htcondor-watch") in err


# --- inventories ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["expected_nodes", "gpu_instances"])
def test_it_exits_78_naming_a_missing_inventory(pool: Pool, capsys, name: str) -> None:
    (pool.config_dir / name).unlink()
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert str(pool.config_dir / name) in err
    assert "an empty file disables the check" in err
    assert no_query_made(pool)
    assert not (pool.state_dir / "state.json").exists()


@pytest.mark.parametrize("content", ["", "# no execute nodes watched here\n\n   \n"])
def test_it_disables_the_node_check_for_an_empty_expected_nodes(pool: Pool, capsys,
                                                                content: str) -> None:
    (pool.config_dir / "expected_nodes").write_text(content)
    broken = write_fake_condor_status(pool.bin_dir, pool.machines_file, exit_code=1)
    stale_gpu(pool)
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == 0, err  # the failing condor_status was never run
    assert recorded_argv(broken.parent) == []
    assert len(pool.prometheus.queries) == 1  # the GPU check still runs
    assert f"ALERT gpu:{G1} (stale)" in out
    assert not any(t.startswith("node:") for t in state.load(pool.state_dir).records)


def test_it_disables_the_gpu_check_for_an_empty_gpu_instances(pool: Pool, capsys) -> None:
    (pool.config_dir / "gpu_instances").write_text("# none\n")
    pool.prometheus.set_response(error_response("down"), status=503)
    pool.set_machines([W1, W2])
    status, _, err = cli(capsys, *pool_args(pool))
    assert status == 0, err
    assert pool.prometheus.queries == []
    assert recorded_argv(pool.bin_dir) == [["-af", "Machine", "LastHeardFrom"]]
    assert (watched(pool), state.load(pool.state_dir).records) == ((2, 0), {})


def test_it_ignores_comments_and_blank_lines_in_inventories(pool: Pool, capsys) -> None:
    (pool.config_dir / "expected_nodes").write_text(
        f"# execute nodes\n\n   \n  {W1}  \n# {W2} retired\n\t\n")
    (pool.config_dir / "gpu_instances").write_text(f"\n#{G2}\n{G1}\n# end\n")
    stale_gpu(pool)
    pool.set_machines([])  # every listed node gets an absence window, so a record
    status, _, err = cli(capsys, *pool_args(pool))
    assert status == 0, err
    assert watched(pool) == (1, 1)
    assert sorted(state.load(pool.state_dir).records) == [f"gpu:{G1}", f"node:{W1}"]


@pytest.mark.parametrize("name", ["expected_nodes", "gpu_instances"])
def test_it_refuses_an_entry_with_spaces_naming_file_and_line(pool: Pool, capsys,
                                                              name: str) -> None:
    (pool.config_dir / name).write_text("# first\nworker1.example.org\nworker 2.example.org\n")
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert f"{pool.config_dir / name}:3:" in err
    assert no_query_made(pool)


# --- the webhook secret -----------------------------------------------------------------------

@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_it_refuses_a_group_or_world_readable_slack_webhook(pool: Pool, capsys,
                                                            mode: int) -> None:
    path = pool.config_dir / "slack_webhook"
    url = secret_webhook(pool, path, mode=mode)
    stale_gpu(pool)
    status, out, err = cli(capsys, "-vv", *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert f"chmod 600 {path}" in err and f"{mode:03o}" in err
    assert TOKEN not in err and url not in err
    assert pool.slack.requests == []


@pytest.mark.parametrize("content", [
    "{url} {url}\n", "{url}\nsecond line\n", "{url} # the team channel\n", "\n", "",
])
def test_it_refuses_a_secret_file_that_does_not_hold_one_url_alone(pool: Pool, capsys,
                                                                   content: str) -> None:
    path = pool.config_dir / "slack_webhook"
    url = f"{pool.slack.url}/services/T0CWTEST/B0CWTEST/{TOKEN}"
    secret_webhook(pool, path, content.format(url=url))
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert str(path) in err and "alone" in err
    assert TOKEN not in err
    assert pool.slack.requests == []


def test_it_refuses_an_unreadable_secret_file_without_a_traceback(pool: Pool, capsys) -> None:
    path = pool.config_dir / "slack_webhook"
    path.write_bytes(b"\xff\xfe" + TOKEN.encode())
    path.chmod(0o600)
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert str(path) in err and "Traceback" not in err and TOKEN not in err

    path.unlink()
    path.mkdir(mode=0o700)
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert str(path) in err and "Traceback" not in err


def test_it_runs_without_channels_when_there_is_no_slack_webhook(pool: Pool, capsys) -> None:
    (pool.config_dir / "slack_webhook").unlink()
    stale_gpu(pool)
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == 0 and f"ALERT gpu:{G1} (stale)" in out, err
    status, out, _ = cli(capsys, *pool_args(pool), "status")
    assert "channels: none configured" in out


# --- watch.toml -------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "where", "known"), [
    ('colour = "blue"\n', "unknown key(s) colour",
     "known: channels, condor, health, maintenance, prometheus, state_dir, thresholds"),
    ('[prometheus]\nadress = "http://127.0.0.1:9090"\n', "[prometheus]: unknown key(s) adress",
     "known: job, timeout_s, url"),
    ("[thresholds]\nfail = 600\n", "unknown key(s) fail",
     "known: fail_s, fresh_s, max_gap_s, node_silence_s, recover_s"),
    ('[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\nchannel = "#ops"\n',
     "channels[0]: unknown key(s) channel", "known: labels, name, timeout_s, type, url"),
])
def test_it_refuses_unknown_keys_listing_the_known_ones(pool: Pool, capsys, text: str,
                                                        where: str, known: str) -> None:
    pool.write_toml(text)
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert where in err and known in err
    assert no_query_made(pool)


@pytest.mark.parametrize(("text", "message"), [
    ('[prometheus]\ntimeout_s = "10"\n', "[prometheus] timeout_s must be a positive number"),
    ("[condor]\ntimeout_s = -1\n", "[condor] timeout_s must be a positive number"),
    ("[thresholds]\nfail_s = true\n", "[thresholds] fail_s must be a positive number"),
    ("[thresholds]\nrecover_s = 0\n", "[thresholds] recover_s must be a positive number"),
    ('prometheus = "http://127.0.0.1:9090"\n', "[prometheus] must be a table"),
    ("[prometheus]\nurl = 9090\n", "[prometheus] url must be a string"),
    ('[prometheus]\njob = "no\\"de"\n', "cannot be used as a label value"),
    ("[condor]\nstatus_command = [\"condor_status\", \"-pool\"]\n",
     "[condor] status_command must be a string"),
    ("state_dir = 5\n", "state_dir must be a string"),
    ("[health]\ntextfile = true\n", "[health] textfile must be a string"),
    ('channels = "slack"\n', "channels must be an array of tables"),
    ('[[channels]]\ntype = "pager"\n', "channels[0].type must be one of slack, alertmanager"),
    ('[[channels]]\ntype = "slack"\nwebhook_file = 5\n', "channels[0].webhook_file must be"),
    ('[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\ntimeout_s = "5"\n',
     "channels[0].timeout_s must be a positive number"),
    ('[[channels]]\ntype = "alertmanager"\nurl = "http://127.0.0.1:9093"\nlabels = "ops"\n',
     "channels[0].labels must be a table of strings"),
    ('[[channels]]\ntype = "alertmanager"\nurl = "http://127.0.0.1:9093"\n'
     "labels = { severity = 3 }\n", "channels[0].labels must be a table of strings"),
])
def test_it_refuses_settings_of_the_wrong_type(pool: Pool, capsys, text: str,
                                               message: str) -> None:
    pool.write_toml(text)
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert message in err
    assert no_query_made(pool)


@pytest.mark.parametrize("text", [
    "[thresholds]\nfresh_s = 900\nfail_s = 900\n",
    "[thresholds]\nfresh_s = 1000\n",  # against the default fail_s of 900
    "[thresholds]\nfail_s = 60\n",  # against the default fresh_s of 120
])
def test_it_refuses_fresh_s_not_below_fail_s(pool: Pool, capsys, text: str) -> None:
    pool.write_toml(text)
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert "fresh_s must be below fail_s" in err


def test_it_applies_configured_thresholds(pool: Pool, capsys) -> None:
    now = time.time()
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({G1: now - 700, G2: now - 20}, now)  # 700 s: aging by default
    status, out, _ = cli(capsys, *pool_args(pool))
    assert status == 0 and out == ""

    pool.write_toml("[thresholds]\nfail_s = 600\nfresh_s = 60\n")
    status, out, _ = cli(capsys, *pool_args(pool))
    assert status == 0 and f"ALERT gpu:{G1} (stale)" in out


def test_it_delivers_to_several_channels(pool: Pool, tmp_path: Path, capsys) -> None:
    webhook_token = "cwWEBHOOKtoken9999"
    with HttpRecorder() as alertmanager, HttpRecorder() as receiver:
        secret_webhook(pool, pool.config_dir / "team-slack")
        hook = pool.config_dir / "hook_url"
        hook.write_text(f"{receiver.url}/hooks/{webhook_token}\n")
        hook.chmod(0o600)
        pool.write_toml(
            '[[channels]]\ntype = "slack"\nname = "ops-slack"\nwebhook_file = "team-slack"\n\n'
            f'[[channels]]\ntype = "alertmanager"\nurl = "{alertmanager.url}"\n'
            'labels = { team = "batch" }\n\n'
            '[[channels]]\ntype = "webhook"\nname = "ticketing"\nurl_file = "hook_url"\n'
        )
        stale_gpu(pool)
        status, out, err = cli(capsys, "-vv", *pool_args(pool))
        assert status == 0, err
        assert f"ALERT gpu:{G1} (stale)" in out

        assert [r.route for r in pool.slack.requests] == [
            f"/services/T0CWTEST/B0CWTEST/{TOKEN}"]
        assert f"ALERT gpu:{G1} (stale)" in pool.slack.requests[0].json()["text"]
        [alert] = alertmanager.requests[0].json()
        assert alertmanager.requests[0].route == "/api/v2/alerts"
        assert alert["labels"] == {"team": "batch", "alertname": alert["labels"]["alertname"],
                                   "check": "gpu", "target": G1}
        [event] = receiver.requests[0].json()["events"]
        assert receiver.requests[0].route == f"/hooks/{webhook_token}"
        assert (event["action"], event["target"], event["status"]) == ("alert", f"gpu:{G1}",
                                                                        "stale")
        assert TOKEN not in out + err and webhook_token not in out + err

        status, out, _ = cli(capsys, *pool_args(pool), "status", "--json")
    channels = json.loads(out)["channels"]
    assert sorted(channels) == ["alertmanager", "ops-slack", "ticketing"]
    assert all(c["pending"] == [] and c["dead_letters"] == [] for c in channels.values())


def test_it_ignores_the_seed_slack_webhook_when_channels_are_listed(pool: Pool,
                                                                    capsys) -> None:
    with HttpRecorder() as alertmanager:
        pool.write_toml(f'[[channels]]\ntype = "alertmanager"\nurl = "{alertmanager.url}"\n')
        stale_gpu(pool)
        status, _, err = cli(capsys, *pool_args(pool))
        assert status == 0, err
        assert alertmanager.requests  # the alert, and perhaps the open alerts re-stated
    assert pool.slack.requests == []


@pytest.mark.parametrize(("text", "message"), [
    ('[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\n'
     '[[channels]]\ntype = "slack"\nwebhook_file = "other"\n',
     "channels[1]: two channels are named 'slack'"),
    ('[[channels]]\ntype = "webhook"\nname = "ops"\nurl_file = "a"\n'
     '[[channels]]\ntype = "alertmanager"\nname = "ops"\nurl = "http://127.0.0.1:9093"\n',
     "channels[1]: two channels are named 'ops'"),
    ('[[channels]]\ntype = "slack"\n', "channels[0] (slack) needs webhook_file"),
    ('[[channels]]\ntype = "webhook"\n', "channels[0] (webhook) needs url_file"),
    ('[[channels]]\ntype = "alertmanager"\n', "channels[0] (alertmanager) needs url"),
    ('[[channels]]\ntype = "alertmanager"\nurl = ""\n', "channels[0] (alertmanager) needs url"),
])
def test_it_refuses_inconsistent_channel_lists(pool: Pool, capsys, text: str,
                                               message: str) -> None:
    pool.write_toml(text)
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert message in err
    assert no_query_made(pool)


def test_it_refuses_a_webhook_file_that_does_not_exist(pool: Pool, capsys) -> None:
    pool.write_toml('[[channels]]\ntype = "slack"\nwebhook_file = "no-such-file"\n')
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert str(pool.config_dir / "no-such-file") in err and "does not exist" in err
    assert no_query_made(pool)


def test_it_lets_command_line_options_win_over_watch_toml(pool: Pool, tmp_path: Path,
                                                          capsys) -> None:
    broken = write_fake_condor_status(tmp_path / "broken", pool.machines_file, exit_code=1)
    toml_state = tmp_path / "toml-state"
    pool.write_toml(f'state_dir = "{toml_state}"\n'
                    f'[prometheus]\nurl = "{dead_port()}"\n'
                    f'[condor]\nstatus_command = "{broken}"\n')
    stale_gpu(pool)
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == 0, err
    assert f"ALERT gpu:{G1} (stale)" in out
    assert len(pool.prometheus.queries) == 1
    assert recorded_argv(pool.bin_dir) == [["-af", "Machine", "LastHeardFrom"]]
    assert recorded_argv(broken.parent) == []
    assert (pool.state_dir / "state.json").is_file() and not toml_state.exists()


def test_it_takes_watch_toml_settings_without_command_line_options(pool: Pool, tmp_path: Path,
                                                                   capsys) -> None:
    toml_state = tmp_path / "toml-state"
    pool.write_toml(f'state_dir = "{toml_state}"\n'
                    f'[prometheus]\nurl = "{pool.prometheus.url}"\njob = "gpu-nodes"\n'
                    f'[condor]\nstatus_command = "{pool.condor_status}"\n')
    stale_gpu(pool)
    status, out, err = cli(capsys, "watch", "--config-dir", str(pool.config_dir))
    assert status == 0, err
    assert f"ALERT gpu:{G1} (stale)" in out
    assert 'job="gpu-nodes"' in pool.prometheus.queries[0]["query"]
    assert recorded_argv(pool.bin_dir) == [["-af", "Machine", "LastHeardFrom"]]
    assert (toml_state / "state.json").is_file() and not pool.state_dir.exists()


def test_it_exits_78_naming_watch_toml_on_a_syntax_error(pool: Pool, capsys) -> None:
    pool.write_toml('[prometheus]\nurl = "http://127.0.0.1:9090\n')
    status, out, err = cli(capsys, *pool_args(pool))
    assert status == EXIT_CONFIG and out == ""
    assert str(pool.config_dir / "watch.toml") in err
    assert "Traceback" not in err
    assert no_query_made(pool)


def test_it_takes_relative_paths_in_watch_toml_from_the_config_dir(tmp_path: Path) -> None:
    from clusterwatch.watch.config import load_config

    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "watch.toml").write_text(
        'state_dir = "state"\n[health]\ntextfile = "../textfiles/watch.prom"\n')
    config = load_config(config_dir)
    assert config.state_dir == config_dir / "state"
    assert config.health_textfile == config_dir / "../textfiles/watch.prom"


def test_it_warns_when_channels_leave_the_seed_slack_file_unused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from clusterwatch.watch.config import load_config

    (tmp_path / "slack_webhook").write_text("https://hooks.example.org/x\n")
    (tmp_path / "watch.toml").write_text(
        '[[channels]]\ntype = "alertmanager"\nurl = "http://127.0.0.1:9093"\n')
    with caplog.at_level(logging.WARNING):
        load_config(tmp_path, tmp_path / "state")
    assert "slack_webhook exists but no [[channels]] entry uses it" in caplog.text
    caplog.clear()
    (tmp_path / "watch.toml").write_text(
        '[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\n')
    with caplog.at_level(logging.WARNING):
        load_config(tmp_path, tmp_path / "state")
    assert "slack_webhook" not in caplog.text
