"""The drawn images' sizes: the plots are drawn at them and the job page sizes its images by
them, without importing matplotlib (a page or a command that draws nothing should not pay
its half second of import)."""

from __future__ import annotations

PLOT_SIZE_IN = (8.0, 3.6)
PIE_SIZE_IN = (6.0, 4.0)
DPI = 100
