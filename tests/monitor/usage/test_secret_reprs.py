"""The objects that carry the usage reports' passwords in memory never print them: a repr
reaches a failing test's report (pytest shows the values of an assertion), a command's
--traceback and an error email's frame variables. Like the PanDA view's settings and the
IRI client's token (field(repr=False))."""

from __future__ import annotations

from pathlib import Path

from clusterwatch.monitor.usage.accounting.slurmdb_settings import read_settings
from clusterwatch.monitor.usage.config import read_config
from clusterwatch.monitor.usage.mail.delivery import Sender
from tests.monitor.usage.mail_support import mail_settings

SECRET = "Sm7p-s3cret-9f1c"


def test_the_mail_runs_sender_never_prints_the_smtp_password(tmp_path: Path) -> None:
    config = read_config({"CLUSTERWATCH_PROMETHEUS_URL": "http://127.0.0.1:9"}, tmp_path)
    sender = Sender(mail_settings(user="monitor"), config, SECRET)
    assert sender.password == SECRET
    assert SECRET not in repr(sender) and SECRET not in str(sender)


def test_the_slurmdb_settings_never_print_the_database_password(tmp_path: Path) -> None:
    secret = tmp_path / "slurmdb-password"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    settings = read_settings({
        "CLUSTERWATCH_SLURMDB_URL": "mysql://clusterwatch_usage@127.0.0.1:3306/cw_usage",
        "CLUSTERWATCH_SLURMDB_PASSWORD_FILE": str(secret)})
    assert settings.password == SECRET
    assert SECRET not in repr(settings) and SECRET not in str(settings)
