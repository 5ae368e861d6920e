"""matplotlib needs no writable home: it draws when the service account's home cannot be
written, and `use_matplotlib_dir` gives it the monitor's own directory for its font list."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from clusterwatch.monitor.usage.rendering.matplotlib_dir import use_matplotlib_dir

ROOT = Path(__file__).resolve().parents[3]
DRAW = (
    "from tests.monitor.usage.render_support import document_of, png_size\n"
    "from tests.monitor.usage.usage_support import good_series, record\n"
    "from clusterwatch.monitor.usage.rendering.plots import render_plot\n"
    "series = good_series()\n"
    "print(png_size(render_plot(document_of(record(), series), series, 'memory')))\n")


def _run(script: str, home: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items()
               if key not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    # Even root cannot make a directory under a regular file: a home nobody can write.
    environ.update(HOME=str(home), TMPDIR=str(tmp))
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=180, check=False, cwd=ROOT, env=environ)


@pytest.fixture
def unwritable_home(tmp_path: Path) -> Path:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    return blocker / "home"


def test_it_draws_when_home_cannot_be_written(tmp_path: Path, unwritable_home: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = _run(DRAW, unwritable_home, scratch)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(800, 360)"


def test_the_monitors_directory_holds_the_font_list_and_nothing_is_said(
        tmp_path: Path, unwritable_home: Path) -> None:
    chosen = tmp_path / "data" / "matplotlib"
    script = ("from pathlib import Path\n"
              "from clusterwatch.monitor.usage.rendering.matplotlib_dir import use_matplotlib_dir\n"
              f"print(use_matplotlib_dir(Path({str(chosen)!r})))\n" + DRAW)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = _run(script, unwritable_home, scratch)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [str(chosen), "(800, 360)"]
    assert "temporary cache directory" not in done.stderr
    assert list(chosen.glob("fontlist-*.json"))
    assert stat.S_IMODE(chosen.stat().st_mode) == 0o700
    assert list(scratch.iterdir()) == []  # no temporary matplotlib directory either


def test_a_directory_set_by_the_service_wins(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "service"))
    assert use_matplotlib_dir(tmp_path / "ours") == tmp_path / "service"
    assert os.environ["MPLCONFIGDIR"] == str(tmp_path / "service")


def test_once_matplotlib_is_loaded_it_changes_nothing(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    import matplotlib  # noqa: F401  # loaded, as in a process that already drew

    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    assert use_matplotlib_dir(tmp_path / "ours") is None
    assert "MPLCONFIGDIR" not in os.environ and not (tmp_path / "ours").exists()


def test_a_directory_that_cannot_be_made_leaves_matplotlib_to_decide(
        tmp_path: Path, unwritable_home: Path) -> None:
    script = ("import os\n"
              "from pathlib import Path\n"
              "from clusterwatch.monitor.usage.rendering.matplotlib_dir import use_matplotlib_dir\n"
              f"print(use_matplotlib_dir(Path({str(unwritable_home / 'mpl')!r})))\n"
              "print(os.environ.get('MPLCONFIGDIR'))\n")
    done = _run(script, unwritable_home, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["None", "None"]
    assert "cannot be made" in done.stderr
