"""A GPU worker on loopback: real node_exporter and Prometheus, the project's own VRAM writer.

The only fake is `nvidia-smi` (a script at the process boundary), since there is no GPU.
Used by the integration tests and by `clusterwatch watch demo`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from clusterwatch.loopback.services import Service, node_exporter, prometheus, wait_for_query

GPU_FILE = "gpu_vram.prom"
FAKE_NVIDIA_SMI = """#!/bin/sh
# Stand-in for nvidia-smi --query-gpu=uuid,memory.free,memory.used,memory.total ...
echo "GPU-0b7c6c1e-3f0a-4d7e-9a51-1c2d3e4f5a6b, 61440, 20480, 81920"
echo "GPU-5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b, 81920, 0, 81920"
"""


@dataclass
class LiveGpuWorker:
    node: Service
    prometheus: Service
    textfile_dir: Path
    nvidia_smi: Path

    @property
    def instance(self) -> str:
        """The Prometheus instance label of this worker (host:port)."""
        return self.node.address

    @property
    def gpu_file(self) -> Path:
        return self.textfile_dir / GPU_FILE

    def write_gpu_file(self) -> float:
        """Run the project's writer once, as the timer would; return the file's mtime."""
        from clusterwatch.cli import main

        status = main(["textfile", "gpu-vram", "--source", "nvidia-smi",
                       "--nvidia-smi", str(self.nvidia_smi), "--output", str(self.gpu_file)])
        if status != 0:
            raise RuntimeError(f"the GPU VRAM writer failed with exit status {status}")
        return self.gpu_file.stat().st_mtime

    def age_gpu_file(self, seconds: float) -> float:
        """Set the file's mtime `seconds` into the past (a writer that stopped); return it."""
        mtime = float(int(time.time() - seconds))
        os.utime(self.gpu_file, (mtime, mtime))
        return mtime

    def wait_until_scraped(self, mtime: float, timeout: float = 30.0) -> None:
        """Block until Prometheus holds this mtime (node_exporter reports whole seconds)."""
        query = f'node_textfile_mtime_seconds{{instance="{self.instance}"}}'

        def holds(answer: dict) -> bool:  # type: ignore[type-arg]
            rows = answer.get("data", {}).get("result", [])
            return any(float(row["value"][1]) == float(int(mtime)) for row in rows)

        wait_for_query(self.prometheus.url, query, holds, timeout=timeout)


@contextlib.contextmanager
def live_gpu_worker(workdir: Path) -> Iterator[LiveGpuWorker]:
    """Start node_exporter (textfile collector) and Prometheus scraping it as job "node"."""
    textfile_dir = workdir / "textfiles"
    textfile_dir.mkdir(parents=True, exist_ok=True)
    bin_dir = workdir / "bin"
    bin_dir.mkdir(exist_ok=True)
    nvidia_smi = bin_dir / "nvidia-smi"
    nvidia_smi.write_text(FAKE_NVIDIA_SMI)
    nvidia_smi.chmod(0o755)
    with node_exporter(textfile_dir, log_dir=workdir) as node, prometheus(
        {"node": [node.address]}, workdir / "prometheus"
    ) as prom:
        yield LiveGpuWorker(node, prom, textfile_dir, nvidia_smi)
