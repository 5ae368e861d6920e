"""Harvester log lines for the demo: the reporter's fixture logs moved to the present, and
more lines in the same formats.

The fixture logs (clusterwatch.loopback.harvester_files: logs/new for the current harvester,
logs/old for the 2020 generation) are real-format excerpts; `fitted` moves the timestamps of
a set of files onto a given interval, keeping their order. The generators write lines the
way the harvester does, for the intervals the fixtures do not cover: a healthy harvester, and
one whose every fetch fails because PanDA's certificate does not verify (2026-10-02).
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from clusterwatch.loopback.harvester_files import harvester_file

LOG_NAMES = ("job_fetcher", "submitter", "worker_adjuster", "communicator", "propagator")
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{3})", re.MULTILINE)
_CERT_ERROR = (
    "failed to POST with <class 'requests.exceptions.SSLError'>:HTTPSConnectionPool("
    "host='{panda}', port=25443): Max retries exceeded with url: {path} (Caused by SSLError("
    "SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
    "unable to get local issuer certificate (_ssl.c:1129)'))) Traceback (most recent call "
    "last):\n"
    "  File \"/opt/harvester/lib/python3.9/site-packages/urllib3/connectionpool.py\", line "
    "703, in urlopen\n"
    "requests.exceptions.SSLError: HTTPSConnectionPool(host='{panda}', port=25443): Max "
    "retries exceeded with url: {path} (Caused by SSLError(...))\n"
)


def stamp(seconds: float) -> str:
    """`2026-10-02 18:20:41,507`: the harvester's log time, UTC."""
    millis = round(seconds * 1000) % 1000
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f",{millis:03d}"


def fixture_logs(generation: str) -> dict[str, str]:
    """{log name: text} of a fixture set ("new" or "old"), for the logs it has."""
    directory = harvester_file("logs", generation)
    return {name: (directory / f"panda-{name}.log").read_text(encoding="utf-8")
            for name in LOG_NAMES if (directory / f"panda-{name}.log").exists()}


def _parse(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%d %H:%M:%S")))


def fitted(logs: Mapping[str, str], start: float, end: float) -> dict[str, str]:
    """`logs` with every timestamp mapped linearly onto [start, end], order kept.

    The demo's reporter runs are seconds apart, not the harvester's minutes: fitting a
    fixture into the real interval keeps each record's times consistent with its interval.
    """
    stamps = [_parse(match.group(1)) for text in logs.values()
              for match in _STAMP.finditer(text)]
    if not stamps:
        return dict(logs)
    first, last = min(stamps), max(stamps)
    scale = (end - start) / (last - first) if last > first else 0.0

    def move(match: re.Match[str]) -> str:
        return stamp(start + (_parse(match.group(1)) - first) * scale
                     + int(match.group(2)) / 1000 * scale if scale else end)

    return {name: _STAMP.sub(move, text) for name, text in logs.items()}


def moments(start: float, end: float, count: int) -> list[float]:
    """`count` times evenly spread over [start, end]."""
    if count <= 1:
        return [end]
    return [start + (end - start) * n / (count - 1) for n in range(count)]


def append(log_dir: Path, logs: Mapping[str, str]) -> None:
    """Appends each text to `log_dir/panda-NAME.log`, as the harvester's daemons do."""
    log_dir.mkdir(parents=True, exist_ok=True)
    for name, text in logs.items():
        with open(log_dir / f"panda-{name}.log", "a", encoding="utf-8") as handle:
            handle.write(text)


# --- the current harvester's formats ----------------------------------------------------

def fetch(at: float, queue: str, asked: int, got: int, outcome: str = "OK",
          label: str = "managed") -> str:
    return (f"{stamp(at - 0.3)} panda.log.job_fetcher: DEBUG    run <queueName={queue}> "
            f"getting {asked} jobs for prodSourceLabel={label} rtype=None\n"
            f"{stamp(at)} panda.log.job_fetcher: INFO     run <queueName={queue}> got {got} "
            f"jobs for prodSourceLabel={label} rtype=None with {outcome}  : took 0.300 sec\n")


def fetch_cert_failure(at: float, queue: str, asked: int, panda: str) -> str:
    """A fetch that fails: PanDA's certificate does not verify (the 2026-10-02 signature)."""
    error = _CERT_ERROR.format(panda=panda, path="/api/v1/pilot/acquire_jobs")
    return (f"{stamp(at - 0.1)} panda.log.job_fetcher: DEBUG    run <queueName={queue}> "
            f"getting {asked} jobs for prodSourceLabel=managed rtype=None\n"
            f"{stamp(at)} panda.log.job_fetcher: INFO     run <queueName={queue}> got 0 jobs "
            f"for prodSourceLabel=managed rtype=None with {error}  : took 0.091 sec\n")


def get_jobs_cert_failure(at: float, queue: str, panda: str) -> str:
    """The communicator's side of the same failure."""
    error = _CERT_ERROR.format(panda=panda, path="/api/v1/pilot/acquire_jobs")
    return (f"{stamp(at)} panda.log.communicator: ERROR    get_jobs <siteName={queue}> "
            f"{error}")


def submitted(at: float, queue: str, fqdn: str, pushes: Sequence[tuple[int, int]],
              status: Mapping[str, int], step: float = 1.0) -> str:
    """The submitter's cycle for `queue`: worker counts read, then (workerID, PandaID) pushes."""
    prefix = (f"panda.log.submitter: {{level}}run <id=submitter-{fqdn}_2911-7f3e8c4f9700 "
              f"queue={queue} jtype=managed rtype=SCORE ptype=PR>")
    debug, info = prefix.format(level="DEBUG    "), prefix.format(level="INFO     ")
    counts = ", ".join(f"'{key}': {value}" for key, value in status.items())
    lines = [f"{stamp(at)} {debug} workers status: {{{counts}}}",
             f"{stamp(at + step / 10)} {debug} got {len(pushes)} job chunks",
             f"{stamp(at + step / 5)} {info} submitting {len(pushes)} workers"]
    for n, (worker_id, panda_id) in enumerate(pushes):
        lines.append(f"{stamp(at + step / 2 + n / 1000)} {info} submitted a "
                     f"workerID={worker_id} for PandaID={panda_id} with "
                     f"submissionHost={fqdn},{fqdn}:9618 batchID={worker_id}.0")
    lines.append(f"{stamp(at + step)} {info} done")
    return "\n".join(lines) + "\n"


# --- the 2020 generation ----------------------------------------------------------------

def fetch_old(at: float, queue: str, asked: int, got: int, outcome: str = "OK") -> str:
    return (f"{stamp(at - 1)} panda.log.job_fetcher: DEBUG    run <queueName={queue}> getting "
            f"{asked} jobs for prodSourceLabel managed\n"
            f"{stamp(at)} panda.log.job_fetcher: INFO     run <queueName={queue}> got {got} "
            f"jobs with {outcome}  : took 1.000 sec\n")
