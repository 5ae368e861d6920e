"""Time a job's PDF against the length of its name: 1,024, 30,000 and 100,000 characters.

A job's name is whatever its owner typed, and reportlab's line breaking grows much faster
than a long name (issue 19: 2 s at 30,000 characters, 22 s at 100,000), so the PDF shows at
most usage/shown_text.SHOWN_LIMIT characters of it (the JSON keeps the whole name). Each
size is drawn twice: `shown`, as the app draws it, and `whole`, the name put in whole as
before the cap (pdf.shown replaced by the identity for that run), so one run gives both
figures. The job is bench_usage_render's synthetic one (a 6-hour, 2-CPU job as the app
reads it: every plot in the PDF), named by one unbroken word (`x` repeated: the worst case
for line breaking) or by short words (`ab ab ...`).

    python benchmarks/bench_usage_pdf_names.py                     # 3 sizes, 3 repeats
    python benchmarks/bench_usage_pdf_names.py --sizes 1024,100000 --repeats 1 --shown-only
    python benchmarks/bench_usage_pdf_names.py --check             # exit 1 past the target

Target: every job's PDF under 2 s (the issue's target for a PDF), whatever its name; judged
on the median CPU time of `shown` (the machine is shared; wall time is shown too).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import nullcontext
from unittest import mock

from bench_usage_render import as_the_app_reads, document_for, synthetic
from clusterwatch.monitor.usage.rendering import pdf

TARGET_S = 2.0
SHAPES = {"word": lambda n: "x" * n, "words": lambda n: ("ab " * n)[:n]}


def timed_pdf(name: str, whole: bool, repeats: int) -> tuple[float, float]:
    """Median CPU and wall seconds of one PDF of the synthetic job named `name`."""
    job, full = synthetic(0.25, 2, 0, 30.0)
    series = as_the_app_reads(full, 30.0)
    document = document_for(dataclasses.replace(job, name=name), series)
    cpu, wall = [], []
    with mock.patch.object(pdf, "shown", lambda text: text) if whole else nullcontext():
        pdf.render_pdf(document, series)  # warm-up: fonts, matplotlib
        for _ in range(repeats):
            began_cpu, began = time.process_time(), time.perf_counter()
            pdf.render_pdf(document, series)
            cpu.append(time.process_time() - began_cpu)
            wall.append(time.perf_counter() - began)
    return statistics.median(cpu), statistics.median(wall)


def run(args: argparse.Namespace) -> int:
    print(
        f"PDF of a 6-hour, 2-CPU job by name length ({args.repeats} repeats, median; "
        f"load average {os.getloadavg()[0]:.2f})"
    )
    print(f"{'name':>8} {'shape':>6} {'shown cpu':>10} {'wall':>8} {'whole cpu':>10} {'wall':>8}")
    missed = False
    for size in args.sizes:
        for shape, make in SHAPES.items():
            name = make(size)
            cpu, wall = timed_pdf(name, False, args.repeats)
            missed = missed or cpu >= TARGET_S
            whole = "-" * 10 + " " + "-" * 8
            if not args.shown_only:
                whole_cpu, whole_wall = timed_pdf(name, True, args.repeats)
                whole = f"{whole_cpu * 1000:8.0f}ms {whole_wall * 1000:6.0f}ms"
            print(
                f"{size:>8,} {shape:>6} {cpu * 1000:8.0f}ms {wall * 1000:6.0f}ms {whole}",
                flush=True,
            )
    print(
        f"target: PDF < {TARGET_S * 1000:.0f} ms whatever the name "
        f"({'missed' if missed else 'met'})"
    )
    return 1 if missed and args.check else 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="1024,30000,100000", help="name lengths in characters, comma-separated"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--shown-only",
        action="store_true",
        help="skip the whole-name runs (the 100,000 one takes 10 s each)",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args(argv)
    try:
        args.sizes = [int(size) for size in args.sizes.split(",")]
    except ValueError:
        parser.error("--sizes: whole numbers, comma-separated")
    if args.repeats < 1 or not args.sizes or min(args.sizes) < 1:
        parser.error("--repeats and every size must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
