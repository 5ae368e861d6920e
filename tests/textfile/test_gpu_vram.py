"""The GPU VRAM textfile writer: parsing, rendering, the NVML reader and the CLI end to end.

nvidia-smi is faked at the process boundary (a shell script in tmp_path); NVML through a fake
`pynvml` object, passed directly or placed in sys.modules for the CLI.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple, Optional, Union

import pytest

from clusterwatch import cli
from clusterwatch.textfile.gpu_vram import (
    GpuMemory,
    NvmlUnavailable,
    ReadError,
    parse_nvidia_smi_csv,
    read_nvml,
    render,
)

MIB = 1048576
UUID_A = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
UUID_B = "GPU-1b2c3d4e-0000-1111-2222-333344445555"
OLD_CONTENT = b'gpu_vram_free_bytes{uuid="GPU-old"} 1\n'
OLD_MTIME_NS = 1_600_000_000_000_000_000


# --- helpers --------------------------------------------------------------------------------

_SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{uuid="(?:[^"\\\n]|\\[\\"n])*"\})? ([0-9]+)')


def assert_exposition_format(text: str) -> None:
    """Every sample is `name{uuid="..."} value` (or unlabelled), typed gauge, no timestamp."""
    assert text.endswith("\n")
    typed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind == "gauge"
            typed.add(name)
            continue
        match = _SAMPLE.fullmatch(line)
        assert match, f"not a sample line without timestamp: {line!r}"
        assert match.group(1) in typed, f"sample before its # TYPE: {line!r}"


def fake_nvidia_smi(directory: Path, body: str) -> Path:
    """An executable `nvidia-smi` that insists on the exact query and then runs `body`."""
    directory.mkdir(exist_ok=True)
    script = directory / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'if [ $# -ne 2 ] || [ "$1" != "--query-gpu=uuid,memory.free,memory.used,memory.total" ]'
        ' || [ "$2" != "--format=csv,noheader,nounits" ]; then\n'
        '  echo "unexpected arguments: $*" >&2; exit 64\n'
        "fi\n" + body + "\n"
    )
    script.chmod(0o755)
    return script


GOOD_CSV_BODY = f"printf '{UUID_A}, 81000, 559, 81559\\n{UUID_B}, 0, 40960, 40960\\n'"


class FakeNvmlError(Exception):
    pass


class FakeMemory(NamedTuple):
    free: int
    used: int
    total: int


class FakePynvml:
    """Just enough of nvidia-ml-py's `pynvml`; handles are device indexes."""

    NVMLError = FakeNvmlError

    def __init__(
        self,
        gpus: list[tuple[Union[str, bytes], int, int, int]],
        fail_init: bool = False,
        fail_memory_at: Optional[int] = None,
        fail_shutdown: bool = False,
    ) -> None:
        self.gpus = gpus
        self.fail_init = fail_init
        self.fail_memory_at = fail_memory_at
        self.fail_shutdown = fail_shutdown
        self.shutdown_calls = 0

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise FakeNvmlError("Driver Not Loaded")

    def nvmlShutdown(self) -> None:
        self.shutdown_calls += 1
        if self.fail_shutdown:
            raise FakeNvmlError("Uninitialized")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> object:
        return index

    def nvmlDeviceGetUUID(self, handle: object) -> Union[str, bytes]:
        assert isinstance(handle, int)
        return self.gpus[handle][0]

    def nvmlDeviceGetMemoryInfo(self, handle: object) -> FakeMemory:
        assert isinstance(handle, int)
        if handle == self.fail_memory_at:
            raise FakeNvmlError("GPU is lost")
        _, free, used, total = self.gpus[handle]
        return FakeMemory(free, used, total)


@pytest.fixture(autouse=True)
def _isolated_cli(monkeypatch: pytest.MonkeyPatch) -> object:
    # Only the textfile part: these tests must not fail because another part's CLI is broken.
    monkeypatch.setattr(cli, "PARTS", {"textfile": cli.PARTS["textfile"]})
    # Plain log format, whatever runs the tests.
    monkeypatch.delenv("JOURNAL_STREAM", raising=False)
    monkeypatch.delenv("INVOCATION_ID", raising=False)
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    yield
    root.handlers[:], level = saved
    root.setLevel(level)


@pytest.fixture
def output(tmp_path: Path) -> Path:
    directory = tmp_path / "textfile"
    directory.mkdir()
    return directory / "gpu_vram.prom"


@pytest.fixture
def previous(output: Path) -> Path:
    """A file an earlier successful run left, with an old mtime."""
    output.write_bytes(OLD_CONTENT)
    os.utime(output, ns=(OLD_MTIME_NS, OLD_MTIME_NS))
    return output


def assert_untouched(path: Path) -> None:
    assert path.read_bytes() == OLD_CONTENT
    assert path.stat().st_mtime_ns == OLD_MTIME_NS
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp file left


def run_cli(*args: str) -> int:
    return cli.main(["textfile", "gpu-vram", *args])


# --- nvidia-smi CSV -------------------------------------------------------------------------


def test_it_parses_one_gpu_and_converts_mib_to_bytes() -> None:
    gpus = parse_nvidia_smi_csv(f"{UUID_A}, 81000, 559, 81559\n")
    assert gpus == [GpuMemory(UUID_A, 81000 * MIB, 559 * MIB, 81559 * MIB)]


def test_it_parses_several_gpus_in_order_ignoring_blank_lines() -> None:
    text = f"{UUID_A}, 1, 2, 3\n\n{UUID_B},4,5,9\n  \n"
    assert [gpu.uuid for gpu in parse_nvidia_smi_csv(text)] == [UUID_A, UUID_B]
    assert parse_nvidia_smi_csv(text)[1] == GpuMemory(UUID_B, 4 * MIB, 5 * MIB, 9 * MIB)


def test_it_accepts_zero_free_memory() -> None:
    assert parse_nvidia_smi_csv(f"{UUID_A}, 0, 40960, 40960")[0].free_bytes == 0


@pytest.mark.parametrize(
    "line",
    [f"{UUID_A}, 1, 2", f"{UUID_A}, 1, 2, 3, 4", "No devices were found", f"{UUID_A} 1 2 3"],
)
def test_it_rejects_a_row_with_the_wrong_field_count(line: str) -> None:
    with pytest.raises(ReadError, match="expected 4 fields"):
        parse_nvidia_smi_csv(line)


@pytest.mark.parametrize("value", ["[N/A]", "[Not Supported]", "", "-1", "1.5", "+3", "12 MiB"])
def test_it_rejects_a_value_that_is_not_whole_mib(value: str) -> None:
    with pytest.raises(ReadError, match="not a number of MiB") as info:
        parse_nvidia_smi_csv(f"{UUID_A}, {value}, 2, 3")
    assert info.value.source == "nvidia-smi"


def test_it_fails_the_whole_read_when_one_gpu_row_is_bad() -> None:
    with pytest.raises(ReadError, match="line 2"):
        parse_nvidia_smi_csv(f"{UUID_A}, 1, 2, 3\n{UUID_B}, [N/A], 2, 3\n")


def test_it_rejects_an_empty_uuid() -> None:
    with pytest.raises(ReadError, match="empty UUID"):
        parse_nvidia_smi_csv(" , 1, 2, 3")


@pytest.mark.parametrize("text", ["", "\n", "  \n\n"])
def test_it_rejects_output_without_gpus(text: str) -> None:
    with pytest.raises(ReadError, match="no GPUs"):
        parse_nvidia_smi_csv(text)


def test_it_rejects_a_uuid_seen_twice() -> None:
    with pytest.raises(ReadError, match="twice"):
        parse_nvidia_smi_csv(f"{UUID_A}, 1, 2, 3\n{UUID_A}, 1, 2, 3\n")


# --- rendering ------------------------------------------------------------------------------


def test_it_renders_the_exact_exposition_text() -> None:
    text = render([GpuMemory("GPU-a", 1, 2, 3), GpuMemory("GPU-b", 0, 9, 9)])
    assert text == (
        "# HELP gpu_vram_free_bytes Free GPU memory (VRAM) in bytes.\n"
        "# TYPE gpu_vram_free_bytes gauge\n"
        'gpu_vram_free_bytes{uuid="GPU-a"} 1\n'
        'gpu_vram_free_bytes{uuid="GPU-b"} 0\n'
        "# HELP gpu_vram_used_bytes Used GPU memory (VRAM) in bytes.\n"
        "# TYPE gpu_vram_used_bytes gauge\n"
        'gpu_vram_used_bytes{uuid="GPU-a"} 2\n'
        'gpu_vram_used_bytes{uuid="GPU-b"} 9\n'
        "# HELP gpu_vram_total_bytes Total GPU memory (VRAM) in bytes.\n"
        "# TYPE gpu_vram_total_bytes gauge\n"
        'gpu_vram_total_bytes{uuid="GPU-a"} 3\n'
        'gpu_vram_total_bytes{uuid="GPU-b"} 9\n'
        "# HELP gpu_vram_gpus Number of GPUs read.\n"
        "# TYPE gpu_vram_gpus gauge\n"
        "gpu_vram_gpus 2\n"
    )
    assert_exposition_format(text)


def test_it_escapes_label_values() -> None:
    text = render([GpuMemory('a"b\\c\nd', 80 * MIB, 0, 80 * MIB)])
    assert 'gpu_vram_free_bytes{uuid="a\\"b\\\\c\\nd"} 83886080\n' in text
    assert_exposition_format(text)


def test_it_renders_large_byte_counts_as_plain_integers() -> None:
    big = 192 * 1024 * MIB  # a 192 GiB GPU: no float rounding, no exponent
    assert 'gpu_vram_total_bytes{uuid="GPU-a"} 206158430208\n' in render(
        [GpuMemory("GPU-a", big, 0, big)]
    )


# --- NVML reader ----------------------------------------------------------------------------


def test_it_reads_memory_through_nvml_in_bytes() -> None:
    nvml = FakePynvml([(UUID_A, 10, 20, 30), (UUID_B, 0, 5, 5)])
    assert read_nvml(nvml) == [GpuMemory(UUID_A, 10, 20, 30), GpuMemory(UUID_B, 0, 5, 5)]
    assert nvml.shutdown_calls == 1


def test_it_decodes_bytes_uuids_from_older_bindings() -> None:
    nvml = FakePynvml([(UUID_A.encode(), 1, 2, 3)])
    assert read_nvml(nvml)[0].uuid == UUID_A


def test_it_fails_when_nvml_raises_midway_and_still_shuts_down() -> None:
    nvml = FakePynvml([(UUID_A, 1, 2, 3), (UUID_B, 1, 2, 3)], fail_memory_at=1)
    with pytest.raises(ReadError, match="GPU 1: GPU is lost") as info:
        read_nvml(nvml)
    assert info.value.source == "nvml"
    assert not isinstance(info.value, NvmlUnavailable)  # a real failure: no fallback
    assert nvml.shutdown_calls == 1


def test_it_reports_an_nvml_that_does_not_initialise_as_unavailable() -> None:
    nvml = FakePynvml([(UUID_A, 1, 2, 3)], fail_init=True)
    with pytest.raises(NvmlUnavailable, match="Driver Not Loaded"):
        read_nvml(nvml)
    assert nvml.shutdown_calls == 0  # never initialised, so nothing to shut down


def test_it_fails_when_nvml_sees_no_gpus() -> None:
    nvml = FakePynvml([])
    with pytest.raises(ReadError, match="no GPUs"):
        read_nvml(nvml)
    assert nvml.shutdown_calls == 1


def test_it_rejects_an_empty_uuid_from_nvml() -> None:
    with pytest.raises(ReadError, match="empty UUID"):
        read_nvml(FakePynvml([(b"", 1, 2, 3)]))


def test_it_keeps_a_good_read_when_nvml_shutdown_fails(caplog: pytest.LogCaptureFixture) -> None:
    nvml = FakePynvml([(UUID_A, 1, 2, 3)], fail_shutdown=True)
    with caplog.at_level(logging.WARNING):
        assert read_nvml(nvml) == [GpuMemory(UUID_A, 1, 2, 3)]
    assert "nvmlShutdown failed" in caplog.text


# --- the CLI end to end: nvidia-smi ---------------------------------------------------------


def test_it_writes_the_file_from_nvidia_smi(
    tmp_path: Path, output: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = fake_nvidia_smi(tmp_path / "bin", GOOD_CSV_BODY)
    assert run_cli("--source", "nvidia-smi", "--nvidia-smi", str(script),
                   "--output", str(output)) == 0
    text = output.read_text()
    assert f'gpu_vram_free_bytes{{uuid="{UUID_A}"}} {81000 * MIB}\n' in text
    assert f'gpu_vram_used_bytes{{uuid="{UUID_B}"}} {40960 * MIB}\n' in text
    assert "gpu_vram_gpus 2\n" in text
    assert_exposition_format(text)
    assert stat.S_IMODE(output.stat().st_mode) == 0o644
    assert sorted(p.name for p in output.parent.iterdir()) == [output.name]
    assert capsys.readouterr().out == ""  # data goes to the file, never stdout


def test_it_replaces_a_previous_file(tmp_path: Path, previous: Path) -> None:
    script = fake_nvidia_smi(tmp_path / "bin", GOOD_CSV_BODY)
    assert run_cli("--source", "nvidia-smi", "--nvidia-smi", str(script),
                   "--output", str(previous)) == 0
    assert previous.read_bytes() != OLD_CONTENT
    assert previous.stat().st_mtime_ns > OLD_MTIME_NS


def test_it_logs_what_it_wrote_at_info(
    tmp_path: Path, output: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = fake_nvidia_smi(tmp_path / "bin", GOOD_CSV_BODY)
    assert cli.main(["-v", "textfile", "gpu-vram", "--source", "nvidia-smi",
                     "--nvidia-smi", str(script), "--output", str(output)]) == 0
    err = capsys.readouterr().err
    assert f"wrote {output}: 2 GPU(s) read through nvidia-smi" in err
    assert UUID_A in err


FAILING_NVIDIA_SMI = {
    "nonzero exit": (
        "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\""
        "\nexit 9",
        "exited with status 9: NVIDIA-SMI has failed",
    ),
    "timeout": ("sleep 5", "did not finish within 1 s"),
    "garbage output": ("echo 'this is not csv at all'", "expected 4 fields"),
    "not available value": (f"echo '{UUID_A}, [N/A], 2, 3'", "not a number of MiB: '[N/A]'"),
    "no GPUs": ("true", "no GPUs found"),
}


@pytest.mark.parametrize("body, reason", FAILING_NVIDIA_SMI.values(), ids=FAILING_NVIDIA_SMI)
def test_it_leaves_the_previous_file_alone_when_nvidia_smi_fails(
    tmp_path: Path, previous: Path, capsys: pytest.CaptureFixture[str], body: str, reason: str
) -> None:
    script = fake_nvidia_smi(tmp_path / "bin", body)
    started = time.monotonic()
    status = run_cli("--source", "nvidia-smi", "--nvidia-smi", str(script),
                     "--output", str(previous), "--timeout", "1")
    # The timeout also kills what the script started (its `sleep`), without waiting for it.
    assert time.monotonic() - started < 4
    assert status == 1
    assert_untouched(previous)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "through nvidia-smi failed" in err
    assert reason in err
    assert "left unchanged" in err


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat_file:
            return stat_file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_it_kills_what_nvidia_smi_started_when_it_times_out(
    tmp_path: Path, output: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    script = fake_nvidia_smi(tmp_path / "bin", f"sleep 30 &\necho $! > {pid_file}\nwait")
    assert run_cli("--source", "nvidia-smi", "--nvidia-smi", str(script),
                   "--output", str(output), "--timeout", "1") == 1
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 2
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
    assert not output.exists()


def test_it_leaves_the_previous_file_alone_when_nvidia_smi_is_missing(
    tmp_path: Path, previous: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "bin" / "nvidia-smi"
    assert run_cli("--source", "nvidia-smi", "--nvidia-smi", str(missing),
                   "--output", str(previous)) == 1
    assert_untouched(previous)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"nvidia-smi failed: cannot run {missing}: No such file or directory" in err


def test_it_finds_nvidia_smi_on_path(
    tmp_path: Path, output: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_nvidia_smi(tmp_path / "bin", GOOD_CSV_BODY)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert run_cli("--source", "nvidia-smi", "--output", str(output)) == 0
    assert "gpu_vram_gpus 2\n" in output.read_text()


def test_it_says_so_when_nvidia_smi_is_not_on_path(
    tmp_path: Path, previous: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert run_cli("--source", "nvidia-smi", "--output", str(previous)) == 1
    assert_untouched(previous)
    assert "nvidia-smi not found on PATH" in capsys.readouterr().err


# --- the CLI end to end: NVML and auto ------------------------------------------------------


def test_it_fails_clearly_when_nvml_is_requested_but_pynvml_is_missing(
    tmp_path: Path, previous: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` fail
    script = fake_nvidia_smi(tmp_path / "bin", GOOD_CSV_BODY)  # present, but not asked for
    assert run_cli("--source", "nvml", "--nvidia-smi", str(script),
                   "--output", str(previous)) == 1
    assert_untouched(previous)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "through nvml failed: the pynvml module is not installed" in err


def test_it_writes_the_file_through_nvml(
    output: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml([(UUID_A.encode(), 1, 2, 3)]))
    assert run_cli("--source", "nvml", "--output", str(output)) == 0
    assert f'gpu_vram_total_bytes{{uuid="{UUID_A}"}} 3\n' in output.read_text()
    assert_exposition_format(output.read_text())


def test_it_leaves_the_previous_file_alone_when_nvml_fails_midway(
    tmp_path: Path, previous: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    nvml = FakePynvml([(UUID_A, 1, 2, 3), (UUID_B, 1, 2, 3)], fail_memory_at=1)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    # In auto mode too: an NVML that initialised and then failed is not a reason to fall back.
    script = fake_nvidia_smi(tmp_path / "bin", GOOD_CSV_BODY)
    assert run_cli("--nvidia-smi", str(script), "--output", str(previous)) == 1
    assert_untouched(previous)
    assert nvml.shutdown_calls == 1
    assert "through nvml failed: GPU 1: GPU is lost" in capsys.readouterr().err


def test_it_prefers_nvml_in_auto_mode(
    tmp_path: Path, output: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml([(UUID_A, 1, 2, 3)]))
    script = fake_nvidia_smi(tmp_path / "bin", "exit 9")  # would fail if it were used
    assert run_cli("--nvidia-smi", str(script), "--output", str(output)) == 0
    assert "gpu_vram_gpus 1\n" in output.read_text()


@pytest.mark.parametrize("pynvml", [None, FakePynvml([], fail_init=True)],
                         ids=["pynvml missing", "NVML does not initialise"])
def test_it_falls_back_to_nvidia_smi_in_auto_mode(
    tmp_path: Path, output: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], pynvml: Optional[FakePynvml],
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    script = fake_nvidia_smi(tmp_path / "bin", GOOD_CSV_BODY)
    assert cli.main(["-v", "textfile", "gpu-vram", "--nvidia-smi", str(script),
                     "--output", str(output)]) == 0
    assert "gpu_vram_gpus 2\n" in output.read_text()
    assert "falling back to nvidia-smi" in capsys.readouterr().err


def test_it_names_both_reasons_when_auto_mode_finds_no_source(
    tmp_path: Path, previous: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert run_cli("--output", str(previous)) == 1
    assert_untouched(previous)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "nvidia-smi not found on PATH" in err
    assert "NVML: the pynvml module is not installed" in err


# --- the CLI end to end: configuration and usage --------------------------------------------


def test_it_exits_78_when_the_output_directory_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = fake_nvidia_smi(tmp_path / "bin", GOOD_CSV_BODY)
    missing = tmp_path / "no-such-dir" / "gpu_vram.prom"
    assert run_cli("--source", "nvidia-smi", "--nvidia-smi", str(script),
                   "--output", str(missing)) == 78
    assert not missing.parent.exists()
    err = capsys.readouterr().err
    assert f"output directory {missing.parent} does not exist" in err


def test_it_exits_78_when_the_output_is_a_directory(tmp_path: Path) -> None:
    script = fake_nvidia_smi(tmp_path / "bin", GOOD_CSV_BODY)
    assert run_cli("--source", "nvidia-smi", "--nvidia-smi", str(script),
                   "--output", str(tmp_path)) == 78


@pytest.mark.parametrize("timeout", ["0", "-1", "soon", "nan", "inf"])
def test_it_rejects_a_timeout_that_is_not_a_positive_number(timeout: str) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli("--timeout", timeout)
    assert info.value.code == 2


def test_it_keeps_the_cli_import_light() -> None:
    # Building the parser on a worker must not load the writer or the NVML bindings.
    code = (
        "import sys, clusterwatch.textfile.cli\n"
        "assert 'clusterwatch.textfile.gpu_vram' not in sys.modules\n"
        "assert 'pynvml' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
