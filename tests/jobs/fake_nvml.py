"""A fake pynvml: the part of NVML the exporter uses, for GPUs given by UUID (GPU i has minor
number 10 + i; a `broken` one raises on its readings), and a machine without the driver."""

from __future__ import annotations

from dataclasses import dataclass

UUID_0 = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
UUID_1 = "GPU-1b2c3d4e-0000-1111-2222-333344445555"


class FakeNvmlError(Exception):
    pass


@dataclass
class _Util:
    gpu: int


@dataclass
class _Memory:
    used: int


class FakeNvml:
    """The part of pynvml the exporter uses: GPU i has minor number 10 + i."""

    NVMLError = FakeNvmlError

    def __init__(self, uuids: list[str], broken: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.uuids = uuids
        self.broken = broken
        self.inits = 0

    def nvmlInit(self) -> None:
        self.inits += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.uuids)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetUUID(self, handle: int) -> bytes:
        return self.uuids[handle].encode()

    def nvmlDeviceGetMinorNumber(self, handle: int) -> int:
        return 10 + handle

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> _Util:
        if self.uuids[handle] in self.broken:
            raise FakeNvmlError("GPU is lost")
        return _Util(gpu=75)

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> _Memory:
        return _Memory(used=(handle + 1) * 1_000_000_000)


class NoDriver:
    NVMLError = FakeNvmlError

    def nvmlInit(self) -> None:
        raise FakeNvmlError("NVML Shared Library Not Found")
