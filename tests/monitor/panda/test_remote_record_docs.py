"""docs/monitor.md's 'Remote harvester record' section says what the builder writes: each fixed
message a record carries is quoted there as the code writes it."""

from __future__ import annotations

from pathlib import Path

from clusterwatch.monitor.panda.remote.builder import BUILDER_VERSION, build_record
from clusterwatch.monitor.panda.remote.dialogs import KINDS_KEPT
from clusterwatch.monitor.panda.remote.limits import fatal_error
from clusterwatch.monitor.panda.remote.workers import LIVE_FOR
from tests.monitor.panda.remote_rows import HARVESTER, KEY, NOW, perlmutter_config, rows

DOCS = Path(__file__).resolve().parents[3] / "docs" / "monitor.md"


def section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    found = text.split("## Remote harvester record (built from the PanDA server)\n", 1)[1]
    return " ".join(found.split("\n## ", 1)[0].split())  # lines joined as they read


def test_it_quotes_every_fixed_message_as_the_builder_writes_it() -> None:
    record = build_record(HARVESTER, KEY, rows(), perlmutter_config(), NOW)
    docs = section()
    quoted = [
        record["fetching"]["read"]["error"],
        record["processes"]["error"],
        record["health"]["volumes"]["error"],
        record["daemons"]["error"].split("): ", 1)[1],
        record["fetching"]["error"].split("): ", 1)[1],
        record["instance"]["error"].split(" and has no", 1)[0].replace(repr(HARVESTER), "'ID'"),
        "(is the harvester id right?)",
        record["harvester_db"]["launch_limits"][
            "NERSC_Perlmutter_epic"]["new_workers"]["meaning"],
        fatal_error(),
        "not applied: OneToOne queue",
    ]
    for text in quoted:
        assert text in docs, text
    assert BUILDER_VERSION.split()[0] in docs
    assert f"at most {KINDS_KEPT} kinds" in docs
    assert "seven days after its submission" in docs and LIVE_FOR.days == 7
