"""sacct_records: the records of sacct's output, whatever its names hold and however it
arrives (issue 19, item 17)."""

from __future__ import annotations

import pytest

from clusterwatch.monitor.usage.accounting.interface import AccountingFailed
from clusterwatch.monitor.usage.accounting.sacct_parse import FIELDS
from clusterwatch.monitor.usage.accounting.sacct_records import records

EVERY_BYTE = bytes(range(1, 256))
SEPARATORS = "\u2028\u2029\u0085\r\n\x0b\x0c\x1c\x1d\x1e"


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_records_read_any_name_whole_however_the_output_arrives(chunk: int) -> None:
    delimiter = b"|5f0c9e|"
    names = [EVERY_BYTE, SEPARATORS.encode(), b"\n\n", b"", "\u00e9\n".encode() + b"\xff"]
    output = b"".join(delimiter.join([f"{n}".encode(), *[b"x"] * (len(FIELDS) - 2), name])
                      + b"\n" for n, name in enumerate(names))
    pieces = [output[i:i + chunk] for i in range(0, len(output), chunk)]
    read = list(records(pieces, delimiter, len(FIELDS)))
    assert [values[0] for _number, values in read] == [str(n) for n in range(len(names))]
    assert [values[-1] for _number, values in read] == [
        name.decode("utf-8", "replace") for name in names]


def test_output_with_a_line_short_of_fields_is_a_failure_not_a_guess() -> None:
    output = b"|d|".join([b"1", b"x"]) + b"\n"
    with pytest.raises(AccountingFailed, match="sacct line 1: 2 fields where 22"):
        list(records([output], b"|d|", len(FIELDS)))
