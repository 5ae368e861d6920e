"""An account's month as words: the row the account pages and the monthly email both show
(jobs, CPU- and GPU-hours with one decimal, efficiencies as percentages, "—" for none)."""

from __future__ import annotations

from dataclasses import dataclass

from clusterwatch.monitor.usage.analysis.accounts import AccountFigures
from clusterwatch.monitor.usage.rendering.summary_rows import percent

HEADINGS = ("Month", "Jobs", "CPU-hours", "GPU-hours", "CPU eff.", "Memory eff.",
            "Wasted CPU-hours")


@dataclass(frozen=True)
class MonthRow:
    month: str
    jobs: str
    cpu_hours: str
    gpu_hours: str
    cpu_efficiency: str
    memory_efficiency: str
    wasted_cpu_hours: str

    def cells(self) -> tuple[str, ...]:
        return (self.month, self.jobs, self.cpu_hours, self.gpu_hours, self.cpu_efficiency,
                self.memory_efficiency, self.wasted_cpu_hours)


def month_row(figures: AccountFigures) -> MonthRow:
    return MonthRow(figures.month, f"{figures.jobs:,}", hours(figures.cpu_hours),
                    hours(figures.gpu_hours), percent(figures.cpu_efficiency),
                    percent(figures.memory_efficiency), hours(figures.wasted_cpu_hours))


def hours(value: float) -> str:
    return f"{value:,.1f}"
