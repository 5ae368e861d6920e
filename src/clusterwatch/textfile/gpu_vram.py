"""GPU VRAM readings for node_exporter's textfile collector.

Pure parts: parsing `nvidia-smi` CSV and rendering the exposition text. Thin adapters: an NVML
reader that takes the `pynvml` module as a parameter and an `nvidia-smi` runner that takes the
command and a timeout, so tests drive both with fakes.

Every read is all-or-nothing: one unreadable GPU fails the whole read, because a file that
silently drops a GPU would look fresh to the pool watch while that GPU is unmonitored.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Protocol, Union, cast

log = logging.getLogger(__name__)

NVML = "nvml"
NVIDIA_SMI = "nvidia-smi"
AUTO = "auto"
SOURCES = (AUTO, NVML, NVIDIA_SMI)

NVIDIA_SMI_ARGS = (
    "--query-gpu=uuid,memory.free,memory.used,memory.total",
    "--format=csv,noheader,nounits",
)
MIB = 1024 * 1024
# nvidia-smi with `nounits` prints whole MiB; anything else ("[N/A]", "[Not Supported]",
# a sign, a decimal point) means the field was not read and must not become a number.
_WHOLE_NUMBER = re.compile(r"[0-9]+")
# After a kill, how long to wait for nvidia-smi to be reaped: a process stuck inside the
# driver cannot die, and waiting for it would hang the writer (systemd would then kill us).
_REAP_GRACE_S = 2.0


@dataclass(frozen=True)
class GpuMemory:
    """One GPU's memory, in bytes."""

    uuid: str
    free_bytes: int
    used_bytes: int
    total_bytes: int


class ReadError(Exception):
    """The GPUs could not be read as a whole; the previous file must stay as it is."""

    def __init__(self, source: str, reason: str) -> None:
        # One line, bounded: the message goes to the journal as a single record.
        self.source = source
        self.reason = _one_line(reason)
        super().__init__(f"{source}: {self.reason}")


class NvmlUnavailable(ReadError):
    """pynvml is missing or NVML did not initialise; `auto` falls back to nvidia-smi."""


class _MemoryInfo(Protocol):
    @property
    def free(self) -> int: ...
    @property
    def used(self) -> int: ...
    @property
    def total(self) -> int: ...


class NvmlApi(Protocol):
    """The part of the `pynvml` module (nvidia-ml-py) this writer uses."""

    @property
    def NVMLError(self) -> type[Exception]: ...  # read-only, so a fake's subclass fits

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> object: ...
    def nvmlDeviceGetUUID(self, handle: object) -> Union[str, bytes]: ...
    def nvmlDeviceGetMemoryInfo(self, handle: object) -> _MemoryInfo: ...


# --- pure parts -----------------------------------------------------------------------------


def parse_nvidia_smi_csv(text: str) -> list[GpuMemory]:
    """Parse `uuid, memory.free, memory.used, memory.total` rows (MiB) into bytes."""
    gpus = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 4:
            raise ReadError(NVIDIA_SMI, f"line {number}: expected 4 fields, got {len(fields)}")
        uuid, *values = fields
        for value in values:
            if not _WHOLE_NUMBER.fullmatch(value):
                raise ReadError(NVIDIA_SMI, f"line {number}: not a number of MiB: {value!r}")
        free, used, total = (int(value) * MIB for value in values)
        gpus.append(GpuMemory(uuid, free, used, total))
    return checked(NVIDIA_SMI, gpus)


def checked(source: str, gpus: Sequence[GpuMemory]) -> list[GpuMemory]:
    """Reject what would make a misleading or invalid file, whichever source read it."""
    if not gpus:
        raise ReadError(source, "no GPUs found")
    seen: set[str] = set()
    for gpu in gpus:
        if not gpu.uuid:
            raise ReadError(source, "a GPU has an empty UUID")
        if gpu.uuid in seen:
            # node_exporter rejects a file with duplicate series, so fail here instead.
            raise ReadError(source, f"GPU UUID {gpu.uuid!r} appears twice")
        seen.add(gpu.uuid)
        for value in (gpu.free_bytes, gpu.used_bytes, gpu.total_bytes):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ReadError(source, f"GPU {gpu.uuid}: bad memory value {value!r}")
    return list(gpus)


_METRICS = (
    ("gpu_vram_free_bytes", "Free GPU memory (VRAM) in bytes.", "free_bytes"),
    ("gpu_vram_used_bytes", "Used GPU memory (VRAM) in bytes.", "used_bytes"),
    ("gpu_vram_total_bytes", "Total GPU memory (VRAM) in bytes.", "total_bytes"),
)


def render(gpus: Sequence[GpuMemory]) -> str:
    """The exposition text. No timestamps: node_exporter skips a file that has them."""
    lines = []
    for name, help_text, field in _METRICS:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for gpu in gpus:
            uuid = escape_label_value(gpu.uuid)
            lines.append(f'{name}{{uuid="{uuid}"}} {getattr(gpu, field)}')
    lines += [
        "# HELP gpu_vram_gpus Number of GPUs read.",
        "# TYPE gpu_vram_gpus gauge",
        f"gpu_vram_gpus {len(gpus)}",
    ]
    return "\n".join(lines) + "\n"


def escape_label_value(value: str) -> str:
    """Escape per the text exposition format: backslash, double quote, line feed."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --- adapters -------------------------------------------------------------------------------


def load_pynvml() -> NvmlApi:
    """Import nvidia-ml-py's `pynvml`, or say why it is unavailable."""
    try:
        module = importlib.import_module("pynvml")
    except ImportError:
        raise NvmlUnavailable(
            NVML, "the pynvml module is not installed (pip install 'clusterwatch[gpu]')"
        ) from None
    return cast(NvmlApi, module)


def read_nvml(pynvml: NvmlApi) -> list[GpuMemory]:
    """Read every GPU through NVML; memory values are already bytes."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        # Not initialised, so no nvmlShutdown (it would fail with "Uninitialized").
        raise NvmlUnavailable(NVML, f"initialisation failed: {exc}") from exc
    try:
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                raw_uuid = pynvml.nvmlDeviceGetUUID(handle)
                memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            except pynvml.NVMLError as exc:
                raise ReadError(NVML, f"GPU {index}: {exc}") from exc
            # Older bindings return the UUID as bytes.
            uuid = raw_uuid.decode("utf-8", "replace") if isinstance(raw_uuid, bytes) else raw_uuid
            gpus.append(GpuMemory(uuid, memory.free, memory.used, memory.total))
    except pynvml.NVMLError as exc:
        raise ReadError(NVML, str(exc)) from exc
    finally:
        _shutdown(pynvml)
    return checked(NVML, gpus)


def _shutdown(pynvml: NvmlApi) -> None:
    # A failed shutdown must neither discard a good read nor hide the real error.
    try:
        pynvml.nvmlShutdown()
    except pynvml.NVMLError as exc:
        log.warning("nvmlShutdown failed: %s", exc)


def run_nvidia_smi(command: Optional[str], timeout: float) -> list[GpuMemory]:
    """Run nvidia-smi (`command`, or the one on PATH) and parse its CSV."""
    path = command or shutil.which("nvidia-smi")
    if path is None:
        raise ReadError(NVIDIA_SMI, "nvidia-smi not found on PATH (use --nvidia-smi PATH)")
    try:
        # A new session, so a timeout kills nvidia-smi together with anything it started.
        process = subprocess.Popen(
            [path, *NVIDIA_SMI_ARGS], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        raise ReadError(NVIDIA_SMI, f"cannot run {path}: {exc.strerror or exc}") from exc
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise ReadError(NVIDIA_SMI, f"{path} did not finish within {timeout:g} s") from None
    if process.returncode != 0:
        # nvidia-smi prints its own failures ("couldn't communicate with the driver") on stdout.
        said = stderr.strip() or stdout.strip() or "no output"
        raise ReadError(NVIDIA_SMI, f"{path} exited with status {process.returncode}: {said}")
    return parse_nvidia_smi_csv(stdout)


def _kill(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=_REAP_GRACE_S)


def read_gpus(
    source: str, nvidia_smi: Optional[str], timeout: float
) -> tuple[str, list[GpuMemory]]:
    """Read through `source`; `auto` prefers NVML and falls back when NVML is unavailable.

    Returns the source actually used. Only a missing or uninitialisable NVML falls back: an
    NVML that initialised and then failed mid-read is a real failure, and nvidia-smi sits
    on the same library anyway.
    """
    if source == NVIDIA_SMI:
        return NVIDIA_SMI, run_nvidia_smi(nvidia_smi, timeout)
    if source == NVML:
        return NVML, read_nvml(load_pynvml())
    if source != AUTO:
        raise ValueError(f"unknown GPU VRAM source {source!r}")
    try:
        return NVML, read_nvml(load_pynvml())
    except NvmlUnavailable as exc:
        log.info("NVML unavailable (%s), falling back to nvidia-smi", exc.reason)
        try:
            return NVIDIA_SMI, run_nvidia_smi(nvidia_smi, timeout)
        except ReadError as smi_exc:
            raise ReadError(NVIDIA_SMI, f"{smi_exc.reason} (NVML: {exc.reason})") from smi_exc
