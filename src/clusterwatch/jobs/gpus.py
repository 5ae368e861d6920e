"""This host's GPUs by UUID, and what a scheduler's GPU names resolve to.

Schedulers name a job's GPUs by host-wide number (Slurm's SLURM_JOB_GPUS, a v1 devices
cgroup's /dev/nvidia<N> minors) or by UUID (HTCondor's `_CONDOR_AssignedGPUs`, often a short
`GPU-1a2b3c4d` prefix). Numbers are read as /dev/nvidia<N> minor numbers, which is what
gres.conf `File=` names, and resolved to UUIDs through NVML (nvidia-ml-py) when it loads and
finds a GPU, else through the driver's /proc/driver/nvidia/gpus/*/information. Utilisation
and memory in use come from NVML only.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from clusterwatch.jobs.file_reader import GPU, FileReader

log = logging.getLogger(__name__)

_FULL_UUID = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
NVIDIA_MAJOR = 195
_NOT_GPU_MINORS = frozenset({254, 255})  # nvidia-modeset, nvidiactl
AUTO = "auto"
NvmlOption = object  # "auto" (import pynvml), a pynvml-like module, or None (no NVML)


@dataclass(frozen=True)
class GpuUsage:
    utilization_ratio: Optional[float]
    memory_used_bytes: Optional[int]


def _text(value: Union[str, bytes]) -> str:
    return value.decode() if isinstance(value, bytes) else value


class GpuInventory:
    def __init__(self, proc_root: str, files: FileReader, nvml: NvmlOption = AUTO) -> None:
        self.proc_root = proc_root
        self.files = files
        self._nvml_option = nvml
        self._nvml: Any = None
        self._nvml_tried = False
        self._handles: dict[str, Any] = {}
        self._minor_uuid: dict[int, str] = {}

    def refresh(self) -> None:
        """Load the GPU list: NVML's once, the driver's files on every call (cheap)."""
        if not self._nvml_tried:
            self._nvml_tried = True
            self._start_nvml()
        if self._nvml is None:
            self._minor_uuid = self._driver_minors()

    def resolve(self, name: str) -> str:
        """The full UUID for a GPU number or (short) UUID; "" when unknown."""
        if name.isdigit():
            return self._minor_uuid.get(int(name), "")
        if name.startswith("MIG-") or _FULL_UUID.fullmatch(name):
            return name
        matches = [uuid for uuid in self._minor_uuid.values() if uuid.startswith(name)]
        return matches[0] if len(matches) == 1 else ""

    def usage(self, uuid: str) -> Optional[GpuUsage]:
        handle = self._handles.get(uuid)
        if handle is None or self._nvml is None:
            return None
        try:
            utilization = self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu / 100
            used = int(self._nvml.nvmlDeviceGetMemoryInfo(handle).used)
        except self._nvml.NVMLError as exc:
            self.files.errors.add(GPU)
            log.debug("NVML reading of %s failed: %s", uuid, exc)
            return None
        return GpuUsage(utilization, used)

    def _start_nvml(self) -> None:
        module: Any = self._nvml_option
        if module is None:
            return
        try:
            if module == AUTO:
                module = importlib.import_module("pynvml")
            module.nvmlInit()
        except Exception as exc:  # ImportError, NVMLError (no driver), OSError
            log.info("NVML unavailable (%s); GPUs from the scheduler's assignment only", exc)
            return
        try:
            for index in range(module.nvmlDeviceGetCount()):
                handle = module.nvmlDeviceGetHandleByIndex(index)
                uuid = _text(module.nvmlDeviceGetUUID(handle))
                self._handles[uuid] = handle
                self._minor_uuid[int(module.nvmlDeviceGetMinorNumber(handle))] = uuid
        except module.NVMLError as exc:
            self.files.errors.add(GPU)
            log.warning("NVML device listing failed: %s", exc)
        if self._handles:
            self._nvml = module

    def _driver_minors(self) -> dict[int, str]:
        directory = os.path.join(self.proc_root, "driver", "nvidia", "gpus")
        try:
            buses = os.listdir(directory)
        except OSError:
            return {}
        found: dict[int, str] = {}
        for bus in buses:
            text = self.files.cgroup_text(os.path.join(directory, bus, "information"))
            fields = dict(
                (key.strip(), value.strip())
                for key, _, value in (line.partition(":") for line in (text or "").splitlines())
            )
            minor, uuid = fields.get("Device Minor", ""), fields.get("GPU UUID", "")
            if minor.isdigit() and uuid.startswith("GPU-"):
                found[int(minor)] = uuid
        return found


def device_minors(minors: tuple[int, ...]) -> tuple[str, ...]:
    """GPU numbers from a devices cgroup's allowed nvidia minors (control devices dropped)."""
    return tuple(str(minor) for minor in minors if minor not in _NOT_GPU_MINORS)
