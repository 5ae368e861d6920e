"""`sacct --parsable2 --delimiter=D` output, read as a stream of records that no field can forge.

A job's name is a C string its user typed: any byte but NUL, line ends and `|` included, so
no fixed separator and no line end can be trusted to bound a record. The delimiter is a
random string chosen for each call (sacct.new_delimiter): the name was written before it
existed, so it cannot hold it, and a record is exactly `fields` values between delimiters.
sacct ends each record with "\\n"; the names it prints come last (JobName), so the piece
between two records is `<name>\\n<next JobID>` and the record ends at its last "\\n" (a JobID
never holds one). Values are decoded one by one, undecodable bytes replaced, so one byte
of a name spoils no other field and no other record.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from clusterwatch.monitor.usage.accounting.interface import AccountingFailed

Record = tuple[int, list[str]]  # (its number in the output, from 1; its values)


def records(chunks: Iterable[bytes], delimiter: bytes, fields: int) -> Iterator[Record]:
    """The records of the output arriving in `chunks`, each as it completes. AccountingFailed
    when the output is not records of `fields` values (never something a name can cause)."""
    if not delimiter or b"\n" in delimiter:
        raise ValueError("the delimiter must be a non-empty string without a line end")
    pending = b""  # what followed the last delimiter seen
    current: list[bytes] = []
    number = 1
    for chunk in chunks:
        pending += chunk
        pieces = pending.split(delimiter)
        pending = pieces.pop()  # it may continue in the next chunk
        for piece in pieces:
            if len(current) < fields - 1:
                current.append(piece)
                continue
            # The last value of this record, "\n", and the first of the next.
            last, brk, first = piece.rpartition(b"\n")
            if not brk:
                raise AccountingFailed(f"sacct line {number}: more than {fields} fields")
            yield number, _decoded([*current, last])
            number += 1
            current = [first]
    if not current and not pending:
        return  # no output: no records
    if len(current) != fields - 1:
        raise AccountingFailed(
            f"sacct line {number}: {len(current) + 1} fields where {fields} were asked for")
    # sacct ends its last line too; a wrapper that drops that "\n" loses nothing
    yield number, _decoded([*current, pending[:-1] if pending.endswith(b"\n") else pending])


def _decoded(values: list[bytes]) -> list[str]:
    return [value.decode("utf-8", "replace") for value in values]
