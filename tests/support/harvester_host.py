"""A harvester host as the reporter's tests lay it out: its log directory with the five
PanDA logs, its env file (mode 600) naming the monitor, its state directory, and the
reporter's arguments for them."""

from __future__ import annotations

from pathlib import Path

from tests.support.tls import CA


class Host:
    """A harvester host as fixture files: log dir, env file, state dir; no database."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log_dir = root / "logs"
        self.log_dir.mkdir()
        self.state = root / "state"
        self.env = root / "reporter.env"
        self.fetcher = self.log_dir / "panda-job_fetcher.log"
        for name in ("job_fetcher", "submitter", "worker_adjuster", "communicator",
                     "propagator"):
            (self.log_dir / f"panda-{name}.log").write_text("")

    def append(self, text: str) -> None:
        with self.fetcher.open("a") as handle:
            handle.write(text)

    def configure(self, url: str, ca: CA | None = None, token: str = "tok-123") -> None:
        lines = [f"SWF_MONITOR_URL={url}", f"SWF_REPORT_TOKEN={token}"]
        if ca is not None:
            lines.append(f"CLUSTERWATCH_CA_BUNDLE={ca.cert}")
        self.env.write_text("\n".join(lines) + "\n")
        self.env.chmod(0o600)

    def without_monitor(self) -> None:
        """A valid env file naming no monitor: runs buffer their records and exit 2."""
        self.env.write_text("")
        self.env.chmod(0o600)

    def args(self, *extra: str) -> list[str]:
        return ["--report-as", "testhost", "--state", str(self.state), "--env", str(self.env),
                "--log-dir", str(self.log_dir), "--harvester-cfg", str(self.root / "no.cfg"),
                "--queue-config", str(self.root / "no.json"), "--volumes", "/,/tmp",
                *extra]
