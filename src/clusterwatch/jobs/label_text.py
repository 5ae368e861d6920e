"""Text from the system made fit for a label value: valid UTF-8, whatever its bytes were.

Directory names and user names come from the system as bytes. Python hands the bytes that
are not UTF-8 over as lone surrogates (surrogateescape), which no UTF-8 encoder accepts: one
HTCondor slot directory named in Latin-1 would fail every scrape. They are written as `\\xNN`
instead, so that distinct names stay distinct and the original bytes stay recognisable.
"""

from __future__ import annotations


def label_text(value: str) -> str:
    """`value` unchanged when it is valid text, else with each undecodable byte as `\\xNN`."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return value
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that stands for no byte: not from a file name
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")
