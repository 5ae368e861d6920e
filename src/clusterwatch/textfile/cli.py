"""`clusterwatch textfile <verb>`: the argument parsers and handlers of the textfile writers.

Working modules are imported inside the handlers, so building the parser loads nothing that
a worker without GPUs (or without nvidia-ml-py) lacks.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from clusterwatch.errors import EXIT_FAILURE, EXIT_OK, ConfigError

log = logging.getLogger(__name__)

DEFAULT_GPU_VRAM_OUTPUT = Path("/var/lib/prometheus/node-exporter/gpu_vram.prom")

_GPU_VRAM_DESCRIPTION = """\
Read free, used and total VRAM of every GPU on this host and write them, in bytes and one
sample per GPU UUID, to a .prom file for node_exporter's textfile collector
(gpu_vram_free_bytes, gpu_vram_used_bytes, gpu_vram_total_bytes, gpu_vram_gpus).

The file is replaced atomically and holds no timestamps. If any GPU cannot be read, nothing
is written: the previous file keeps its content and its mtime ages, which is how the pool
watch notices a writer that stopped working (node_textfile_mtime_seconds)."""

_GPU_VRAM_EPILOG = """\
Exit status: 0 written, 1 the GPUs could not be read or the file not written (one line on
stderr names the source and the reason), 2 usage error, 78 the output directory is missing.
Run it from a systemd timer every 30 s (deploy/systemd/clusterwatch-gpu-vram.timer)."""


def register(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    gpu_vram = verbs.add_parser(
        "gpu-vram",
        help="write GPU VRAM free/used/total per GPU UUID (NVML or nvidia-smi)",
        description=_GPU_VRAM_DESCRIPTION,
        epilog=_GPU_VRAM_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gpu_vram.add_argument(
        "--output", type=Path, default=DEFAULT_GPU_VRAM_OUTPUT, metavar="PATH",
        help="the .prom file to replace; its directory must exist and be node_exporter's "
        "--collector.textfile.directory (default: %(default)s)",
    )
    gpu_vram.add_argument(
        "--source", choices=("auto", "nvml", "nvidia-smi"), default="auto",
        help="where to read VRAM: NVML through nvidia-ml-py, or nvidia-smi; auto uses NVML "
        "when pynvml imports and initialises, else nvidia-smi (default: %(default)s)",
    )
    gpu_vram.add_argument(
        "--nvidia-smi", dest="nvidia_smi", metavar="PATH", default=None,
        help="the nvidia-smi executable (default: nvidia-smi found on PATH)",
    )
    gpu_vram.add_argument(
        "--timeout", type=_positive_seconds, default=10.0, metavar="SECONDS",
        help="kill nvidia-smi and fail if it runs longer than this (default: %(default)g)",
    )
    gpu_vram.set_defaults(handler=_gpu_vram)


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return seconds


def _gpu_vram(args: argparse.Namespace) -> int:
    from clusterwatch.atomic_write import write_atomically
    from clusterwatch.textfile import gpu_vram

    output: Path = args.output
    # Checked before reading: a wrong path is a deployment mistake, not a GPU failure.
    if output.is_dir():
        raise ConfigError(f"--output {output} is a directory; give the path of a .prom file")
    if not output.parent.is_dir():
        raise ConfigError(
            f"output directory {output.parent} does not exist; create it or point --output "
            "into node_exporter's --collector.textfile.directory"
        )
    try:
        source, gpus = gpu_vram.read_gpus(args.source, args.nvidia_smi, args.timeout)
    except gpu_vram.ReadError as exc:
        log.error("reading GPU VRAM through %s failed: %s; %s left unchanged",
                  exc.source, exc.reason, output)
        return EXIT_FAILURE
    try:
        write_atomically(output, gpu_vram.render(gpus).encode("utf-8"), mode=0o644)
    except PermissionError as exc:
        raise ConfigError(f"cannot write {output}: {exc.strerror}") from exc
    except OSError as exc:
        log.error("writing %s failed: %s", output, exc.strerror or exc)
        return EXIT_FAILURE
    log.info("wrote %s: %d GPU(s) read through %s (%s)", output, len(gpus), source,
             ", ".join(gpu.uuid for gpu in gpus))
    return EXIT_OK
