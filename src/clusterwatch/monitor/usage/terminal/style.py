"""Colours and bar characters for the terminal: colour only on a terminal, as users expect.

Colour is on when stdout is a terminal, TERM is not `dumb` and NO_COLOR is unset
(no-color.org); `--color always|never` decides otherwise. Bars are block characters when the
output's encoding can write them, else `#`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional, TextIO

from clusterwatch.monitor.usage.analysis.thresholds import DEFAULTS

_RESET = "\x1b[0m"
_CODES = {"red": "\x1b[31m", "yellow": "\x1b[33m", "green": "\x1b[32m", "bold": "\x1b[1m"}


@dataclass(frozen=True)
class Style:
    colour: bool
    fill: str = "#"
    low: float = DEFAULTS.cpu_efficiency_min  # below: red; below (1 + low) / 2: yellow

    def _paint(self, code: str, text: str) -> str:
        return f"{_CODES[code]}{text}{_RESET}" if self.colour and text else text

    def red(self, text: str) -> str:
        return self._paint("red", text)

    def yellow(self, text: str) -> str:
        return self._paint("yellow", text)

    def green(self, text: str) -> str:
        return self._paint("green", text)

    def bold(self, text: str) -> str:
        return self._paint("bold", text)

    def by_efficiency(self, text: str, fraction: Optional[float]) -> str:
        """`text` red for a poor efficiency, yellow for a middling one, green for a good one."""
        if fraction is None:
            return text
        if fraction < self.low:
            return self.red(text)
        return self.yellow(text) if fraction < (1 + self.low) / 2 else self.green(text)


def choose_style(stream: TextIO, choice: str = "auto",
                 environ: Optional[Mapping[str, str]] = None) -> Style:
    env = os.environ if environ is None else environ
    if choice == "auto":
        colour = (stream.isatty() and env.get("TERM", "") != "dumb"
                  and "NO_COLOR" not in env)
    else:
        colour = choice == "always"
    return Style(colour, fill="█" if _writes(stream, "█") else "#")


def _writes(stream: TextIO, text: str) -> bool:
    try:
        text.encode(stream.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True
