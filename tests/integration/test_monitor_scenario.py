"""The 2026-10-02 incident end to end, with every part running as it runs in production.

A harvester whose every fetch fails with `SSLError ... CERTIFICATE_VERIFY_FAILED` (log lines
in the harvester's own format, from clusterwatch.loopback.harvester_logs); the real reporter,
built as the zipapp and run by the system's python3, posting over HTTP to the monitor under
gunicorn on 127.0.0.1 with a token from `create_host_token`; an operator reading the queue
and hosts pages through the login form; `evaluate_alarms` delivering to a loopback fake
Slack. Then the fetches work again, and the same path carries the recovery.

No MariaDB: the harvester's configuration names the sqlite engine, which the reporter does not
read, so every database part of the record says so (the pages and alarms cope with that).

During scripts/test's PostgreSQL pass, `private_database` puts the monitor on a fresh
database of that server, so this runs against PostgreSQL too.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import time
from pathlib import Path

import pytest

from clusterwatch.loopback import harvester_logs as logs
from clusterwatch.loopback import harvester_scenario as scenario
from clusterwatch.loopback.harvester_scenario import Harvester, write_private
from clusterwatch.loopback.http_recorder import SLACK_WEBHOOK_PATH, fake_slack
from clusterwatch.loopback.monitor_client import Session
from clusterwatch.loopback.monitor_server import monitor_server, private_database

from .scenario_support import Scenario

pytestmark = pytest.mark.integration

KEY = "pandaharvester02"
QUEUES = ("BNL_PanDA_1", "BNL_GPU_1")
CYCLES = 3  # fetch cycles the harvester logs between two reporter runs
SLACK_TIMEOUT_S = 10
TRACEBACK = "Traceback (most recent call last):"
QUEUE_STEP_S = 0.12  # between two queues' fetches in one cycle
OPERATOR = "operator"
_CREATE_OPERATOR = ("import os\nfrom django.contrib.auth import get_user_model\n"
                    "from clusterwatch.monitor.core.operators import set_operator\n"
                    f"set_operator(get_user_model().objects.create_user({OPERATOR!r}, "
                    "password=os.environ['SCENARIO_PASSWORD']), True)\n")


def page_text(session: Session, path: str) -> str:
    status, body = session.get(path)
    assert status == 200, f"{path} answered {status}"
    return html.unescape(body.decode("utf-8"))


def failing_interval(start: float, end: float) -> tuple[dict[str, str], str]:
    """Every fetch of every queue fails on PanDA's certificate, as the job fetcher and the
    communicator log it; and the communicator's last line (its first physical line: the
    traceback follows on lines without a timestamp)."""
    fetcher, communicator = [], []
    for at in logs.moments(start, end, CYCLES):  # over 0.25 s apart
        for n, queue in enumerate(QUEUES):  # one after the other, each taking 0.1 s
            when = at - QUEUE_STEP_S * (len(QUEUES) - 1 - n)
            communicator.append(logs.get_jobs_cert_failure(when - 0.005, queue, scenario.PANDA))
            fetcher.append(logs.fetch_cert_failure(when, queue, 35, scenario.PANDA))
    last_line = communicator[-1].splitlines()[0]
    assert "CERTIFICATE_VERIFY_FAILED" in last_line and last_line.endswith(TRACEBACK)
    return {"job_fetcher": "".join(fetcher), "communicator": "".join(communicator)}, last_line


def healthy_interval(start: float, end: float) -> dict[str, str]:
    """PanDA answers again: jobs for the first queue, "no jobs in PanDA" for the second."""
    records = []
    for n, at in enumerate(logs.moments(start, end, CYCLES)):
        records.append(logs.fetch(at - QUEUE_STEP_S, QUEUES[0], 35, 20 + n))
        records.append(logs.fetch(at, QUEUES[1], 10, 0, "no jobs in PanDA"))
    # The fetcher's threads overlap; its log is still in time order (one-line records).
    return {"job_fetcher": "".join(sorted(line for record in records
                                          for line in record.splitlines(keepends=True)))}


def slack_lines(request_text: str, action: str) -> list[str]:
    return [line for line in request_text.splitlines()
            if f" {action} panda_unreachable {KEY}:" in line]


def test_it_follows_an_unreachable_panda_from_the_harvester_log_to_slack_and_back(
    tmp_path: Path, python3: str, zipapp: Path
) -> None:
    host = Harvester(KEY, f"{KEY}.sdcc.bnl.gov", "new", QUEUES, None, True, 0,
                     tmp_path / "harvester")
    # Its files, and an hour of failing fetches that the first run only skips past.
    scenario.set_up(host, None, "", time.time())
    data_dir = tmp_path / "monitor"

    with private_database(tmp_path) as database, \
            monitor_server(data_dir, database=database, workers=2) as server, \
            fake_slack() as slack:
        run = Scenario(server, slack, host, python3, zipapp, volume=str(tmp_path))
        # The token, as an operator makes it: printed once, as the last line.
        run.token = server.manage("create_host_token", KEY).stdout.strip().splitlines()[-1]
        host.write_env(server.url, run.token)
        assert host.env_file.stat().st_mode & 0o777 == 0o600
        password = "scenario-" + os.urandom(6).hex()
        server.manage("shell", "-c", _CREATE_OPERATOR,
                      extra_environ={"SCENARIO_PASSWORD": password})
        # One channel, as in production: the webhook URL in a mode-600 file beside the
        # config. A full disk on the test machine must not add an alarm of its own.
        write_private(data_dir / "slack_webhook", slack.url + SLACK_WEBHOOK_PATH + "\n")
        (data_dir / "alarms.toml").write_text(
            'disk_used_percent = 100\n\n[[channels]]\ntype = "slack"\n'
            'name = "scenario-slack"\nwebhook_file = "slack_webhook"\n', encoding="utf-8")
        session = Session(server.url)
        session.login(OPERATOR, password)

        # 1. The first run only sets the log positions: the host is known, no queue yet
        # (this harvester has no database the reporter reads, so only its logs name them).
        run.report()
        assert f'<tr id="host-{KEY}"' in page_text(session, "/hosts/")
        queue_page = f"/queues/{QUEUES[0]}/"
        assert session.get(queue_page)[0] == 404

        # 2. The harvester logs an interval of failing fetches; the reporter posts it.
        failing, last_line = failing_interval(*run.interval())
        logs.append(host.log_dir, failing)
        run.report()

        text = page_text(session, queue_page)
        attempts = CYCLES
        assert (f"every fetch in the last interval failed with SSLError ({attempts} of "
                f"{attempts})") in text
        assert re.search(r"Error class:\s*<span class=\"error-class\">SSLError</span>", text)
        # The one line that says why, exactly as the harvester wrote it (communicator.last).
        assert f'<pre class="logline">{last_line}</pre>' in text
        assert "communicator.last" in text
        # The queue's pilot dispatch, read by the reporter from the queue's template.
        sha = hashlib.sha256((host.root / "submit_pilot.sdf").read_bytes()).hexdigest()
        assert '<span class="dispatch-kind kind-image_bound">image_bound</span>' in text
        assert f'<code class="template-hash" title="{sha}">{sha[:12]}</code>' in text
        assert f"<code>{scenario.PILOT_IMAGE}</code>" in text
        hosts = page_text(session, "/hosts/")
        assert f'<tr id="host-{KEY}"' in hosts and f"<strong>{KEY}</strong>" in hosts
        assert f'href="/queues/{QUEUES[1]}/"' in hosts

        # 3. The alarm names the harvester, the error class and the line.
        printed = run.manage("evaluate_alarms")
        assert "1 raised" in printed and "scenario-slack delivered" in printed
        (alert,) = slack.wait_for(timeout=SLACK_TIMEOUT_S)
        alert_text = alert.json()["text"]
        (alert_line,) = slack_lines(alert_text, "ALERT")
        assert f"{KEY}: every fetch failed with SSLError ({len(QUEUES) * CYCLES} of " \
               f"{len(QUEUES) * CYCLES})" in alert_line
        said = " ".join(last_line.split()).removesuffix(TRACEBACK).rstrip()
        assert f"last error: {said} (incident " in alert_line
        incident = re.search(r"\(incident ([0-9a-f]+)\)$", alert_line)
        assert incident is not None
        status = json.loads(run.manage("alarms_status", "--json"))
        assert [a["target"] for a in status["open_alarms"]] == [f"panda_unreachable:{KEY}"]
        assert status["open_alarms"][0]["incident"] == incident.group(1)

        # 4. PanDA answers again: the next interval's fetches succeed.
        logs.append(host.log_dir, healthy_interval(*run.interval()))
        run.report()
        printed = run.manage("evaluate_alarms")
        assert "1 recovered, 0 open" in printed
        _, recovery = slack.wait_for(timeout=SLACK_TIMEOUT_S, count=2)
        (recover_line,) = slack_lines(recovery.json()["text"], "RECOVER")
        assert f"{KEY}: fetches succeed again ({2 * CYCLES} of {2 * CYCLES} OK" in recover_line
        assert recover_line.endswith(f"(incident {incident.group(1)})")

        text = page_text(session, queue_page)
        assert "every fetch" not in text and "Error class" not in text
        assert f"jobs arrive: got {sum(20 + n for n in range(CYCLES))} in the last interval" \
            in text
        status_text = run.manage("alarms_status")
        assert "open alarms: 0" in status_text
        assert f"panda_unreachable:{KEY} at " in status_text  # recently recovered
        assert f"incident {incident.group(1)}" in status_text
        pages = [page_text(session, path) for path in (queue_page, "/hosts/")]

    # Nothing said the token or the webhook: the reporter, the commands after
    # create_host_token, the pages, or gunicorn's log (read after it stopped).
    said_anywhere = "\n".join([*run.outputs, *pages, server.log_path.read_text()])
    assert run.token not in said_anywhere
    assert SLACK_WEBHOOK_PATH not in said_anywhere
    assert len(slack.requests) == 2
