"""The README's reporter section lists every option `--help` shows, each with its metavar,
and nothing else: the list cannot drift from the parser again (it once left out `--mysql`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from clusterwatch.reporter.main import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## The harvester host reporter"
OPTION = re.compile(r"`(--[a-z][a-z-]*)(?: ([A-Z]+))?`")


def readme_options() -> dict[str, Optional[str]]:
    """Option -> metavar (None for a flag), from the section's `Options` paragraph."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    paragraph = section[section.index("\nOptions"):]
    paragraph = paragraph[:paragraph.index("\n\n")] if "\n\n" in paragraph else paragraph
    listed: dict[str, Optional[str]] = {}
    for option, metavar in OPTION.findall(paragraph[:paragraph.index("Exit status")]):
        listed.setdefault(option, metavar or None)  # later mentions say what is refused
    return listed


def parser_options() -> dict[str, Optional[str]]:
    """Option -> metavar (None for a flag), as `--help` shows them."""
    shown: dict[str, Optional[str]] = {}
    for action in build_parser()._actions:
        for option in action.option_strings:
            if option.startswith("--"):
                shown[option] = str(action.metavar) if action.metavar is not None else None
    return shown


def test_it_lists_every_option_the_parser_has_and_no_other() -> None:
    assert readme_options() == parser_options()


def test_it_reads_the_options_it_is_meant_to() -> None:
    assert {"--mysql": "PROGRAM", "--help": None, "--print": None}.items() <= \
        readme_options().items()
    help_text = build_parser().format_help()
    assert all(option in help_text for option in parser_options())
