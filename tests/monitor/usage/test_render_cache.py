from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import threading
import time
from pathlib import Path

import matplotlib
import pytest
import reportlab

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.rendering import cache as render_cache
from clusterwatch.monitor.usage.rendering import rendered
from clusterwatch.monitor.usage.rendering.cache import (
    RenderCache,
    RenderKey,
    RenderKind,
    render_key,
)
from clusterwatch.monitor.usage.rendering.plot_metrics import UnknownMetric
from tests.monitor.usage.render_support import PNG_SIGNATURE, document_of, span_series
from tests.monitor.usage.usage_support import HOUR, good_series, record


class Counter:
    """A renderer that counts its calls and returns distinct bytes each time."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return f"image {self.calls} ".encode() * 100


def _ended() -> UsageDocument:
    return document_of(record(), good_series())


def _key(metric: str = "memory", document: UsageDocument | None = None) -> RenderKey:
    key = render_key(RenderKind.PLOT, document or _ended(), good_series(), metric)
    assert key is not None
    return key


def _kept(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if not p.name.startswith("."))


def test_it_renders_once_and_then_serves_the_kept_bytes(tmp_path: Path) -> None:
    cache, render = RenderCache(tmp_path / "renders"), Counter()
    first = cache.get_or_render(_key(), render)
    assert cache.get_or_render(_key(), render) == first
    assert render.calls == 1
    assert cache.get_or_render(_key("cpu"), render) != first and render.calls == 2


def test_a_running_job_is_drawn_every_time_and_never_kept(tmp_path: Path) -> None:
    running = document_of(record(state="RUNNING", end=None), good_series())
    assert running["running"] is True
    assert render_key(RenderKind.PLOT, running, good_series(), "cpu") is None
    cache, render = RenderCache(tmp_path / "renders"), Counter()
    cache.get_or_render(None, render)
    cache.get_or_render(None, render)
    assert render.calls == 2 and not (tmp_path / "renders").exists()


def test_files_are_mode_600_in_a_directory_of_mode_700(tmp_path: Path) -> None:
    directory = tmp_path / "renders"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)  # noqa: S103  # as a careless umask would leave it
    RenderCache(directory).get_or_render(_key(), Counter())
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    (kept,) = _kept(directory)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "foreign"])
def test_a_damaged_file_is_drawn_again_never_served(tmp_path: Path, damage: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    cache, render = RenderCache(tmp_path), Counter()
    good = cache.get_or_render(_key(), render)
    (kept,) = _kept(tmp_path)
    data = kept.read_bytes()
    damaged = {"truncate": data[: len(data) - 7], "empty": b"",
               "flip": data[:-1] + bytes([data[-1] ^ 1]),
               "foreign": PNG_SIGNATURE + b"not ours"}[damage]
    kept.write_bytes(damaged)
    with caplog.at_level(logging.WARNING):
        again = cache.get_or_render(_key(), render)
    assert render.calls == 2 and again == b"image 2 " * 100 != good
    assert "damaged" in caplog.text
    assert cache.get_or_render(_key(), render) == again and render.calls == 2  # rewritten


@pytest.mark.parametrize("obstacle", ["directory", "fifo"])
def test_an_unreadable_file_is_drawn_again_without_blocking(tmp_path: Path,
                                                            obstacle: str) -> None:
    cache, render = RenderCache(tmp_path), Counter()
    path = tmp_path / _key().filename()
    if obstacle == "fifo":
        os.mkfifo(path)  # opening it for reading would wait for a writer forever
    else:
        path.mkdir()
    result: list[bytes] = []
    worker = threading.Thread(target=lambda: result.append(cache.get_or_render(_key(), render)))
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive() and result == [b"image 1 " * 100]


def test_past_its_size_the_least_recently_used_files_go(tmp_path: Path) -> None:
    one_file = len(render_cache.MAGIC) + 32 + len(Counter()())
    cache, render = RenderCache(tmp_path, max_bytes=3 * one_file), Counter()
    keys = [_key(metric) for metric in ("cpu", "memory", "threads", "open_files")]
    for age, key in enumerate(keys[:3]):
        cache.get_or_render(key, render)
        os.utime(tmp_path / key.filename(), (time.time() - 100 + age,) * 2)
    cache.get_or_render(keys[0], render)  # used again: now the most recent
    assert render.calls == 3
    cache.get_or_render(keys[3], render)
    names = {p.name for p in _kept(tmp_path)}
    assert names == {keys[0].filename(), keys[2].filename(), keys[3].filename()}


def test_it_removes_only_its_own_files(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("the operator's note")
    (tmp_path / "matplotlib").mkdir()
    RenderCache(tmp_path, max_bytes=1).get_or_render(_key(), Counter())
    assert (tmp_path / "README").exists() and (tmp_path / "matplotlib").is_dir()


def test_an_unusable_directory_costs_a_render_not_a_failure(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("in the way")
    cache, render = RenderCache(blocker / "renders"), Counter()
    with caplog.at_level(logging.WARNING):
        assert cache.get_or_render(_key(), render) == b"image 1 " * 100
        cache.get_or_render(_key(), render)
    assert render.calls == 2 and "not kept" in caplog.text


def test_the_key_follows_everything_the_image_depends_on(monkeypatch: pytest.MonkeyPatch) -> None:
    document = _ended()
    base = render_key(RenderKind.PLOT, document, good_series(), "cpu")
    assert base == render_key(RenderKind.PLOT, _ended(), good_series(), "cpu")
    changed = [
        render_key(RenderKind.PLOT, document_of(record(cpus_allocated=8), good_series()),
                   good_series(), "cpu"),
        render_key(RenderKind.PLOT, document, span_series(HOUR, 60, **good_series().series), "cpu"),
        render_key(RenderKind.PLOT, document, None, "cpu"),
        render_key(RenderKind.PLOT, document, good_series(), "cpu", "the series are gone"),
        render_key(RenderKind.PDF, document, good_series(), "cpu"),
    ]
    monkeypatch.setattr(render_cache, "RENDER_VERSION", "next")
    changed.append(render_key(RenderKind.PLOT, document, good_series(), "cpu"))
    digests = [key.digest for key in changed if key is not None]
    assert base is not None and len(digests) == 6
    assert base.digest not in digests and len(set(digests)) == 6


def test_a_kept_file_keeps_the_name_and_digest_the_kind_word_gave_it() -> None:
    # Files kept before the kind was an Enum must still be found: the word, not the member,
    # goes into the name and the digest.
    document, series = _ended(), good_series()
    key = render_key(RenderKind.PLOT, document, series, "cpu")
    identity = json.dumps({
        "version": [render_cache.RENDER_VERSION, matplotlib.__version__, reportlab.Version],
        "kind": "plot", "metric": "cpu", "note": None, "document": document,
        "series": render_cache.series_shape(series)}, sort_keys=True, default=str)
    assert key is not None and key.digest == hashlib.sha256(identity.encode()).hexdigest()
    assert key.filename() == f"plot_{document['jobid']}_cpu-{key.digest[:40]}"


def test_a_file_name_never_carries_path_tricks() -> None:
    key = RenderKey(RenderKind.PLOT, "../../etc/passwd", "a/b", "0" * 64)
    assert "/" not in key.filename() and ".." not in key.filename()


def test_the_views_helpers_share_one_file_for_an_alias_and_our_name(tmp_path: Path) -> None:
    series = good_series()
    document = document_of(record(), series)
    cache = RenderCache(tmp_path)
    ours = rendered.plot_png(cache, document, series, "cpu")
    assert ours.startswith(PNG_SIGNATURE)
    assert rendered.plot_png(cache, document, series, "jobs_cpu_percent") == ours
    assert len(_kept(tmp_path)) == 1
    with pytest.raises(UnknownMetric):
        rendered.plot_png(cache, document, series, "../cpu")
    assert rendered.pie_png(cache, document).startswith(PNG_SIGNATURE)
    pdf = rendered.report_pdf(cache, document, series)
    assert pdf.startswith(b"%PDF") and rendered.report_pdf(cache, document, series) == pdf
    assert len(_kept(tmp_path)) == 3
    assert rendered.plot_png(None, document, series, "cpu") == ours
