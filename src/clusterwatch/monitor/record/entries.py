"""`Entries`: a JSON object's entries (queues, sites, reasons, mounts), each read the first
time it is asked for.

A whole record names hundreds of queues and thousands of not-finished reasons, and a page
shows one queue of it, an alarm none of its database parts: reading every entry up front
made a 200 KB record cost milliseconds for each reader. Each entry is still read once, by
one function, into its typed value.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Any, Callable, Generic, TypeVar

EntryT = TypeVar("EntryT")


def every(name: str, value: Any) -> bool:
    return True


class Entries(Mapping[str, EntryT], Generic[EntryT]):
    """The entries of `found` that `keep(name, value)` accepts, read by `read` on first use."""

    __slots__ = ("_complete", "_found", "_keep", "_read", "_read_already")

    def __init__(self, found: Mapping[str, Any], read: Callable[[Any], EntryT],
                 keep: Callable[[str, Any], bool] = every) -> None:
        self._found = found
        self._read = read
        self._keep = keep
        self._read_already: dict[str, EntryT] = {}
        self._complete = False

    def __getitem__(self, name: str) -> EntryT:
        if name in self._read_already:
            return self._read_already[name]
        value = self._found[name]
        if self._complete or not self._keep(name, value):
            raise KeyError(name)
        entry = self._read_already[name] = self._read(value)
        return entry

    def __contains__(self, name: object) -> bool:
        if name in self._read_already:
            return True
        return (not self._complete and isinstance(name, str) and name in self._found
                and self._keep(name, self._found[name]))

    def _every(self) -> dict[str, EntryT]:
        """Every entry, read (those not read yet) in the object's order."""
        if not self._complete:
            read_already = self._read_already
            self._read_already = {
                name: read_already[name] if name in read_already else self._read(value)
                for name, value in self._found.items() if self._keep(name, value)}
            self._complete = True
        return self._read_already

    def __iter__(self) -> Iterator[str]:
        return iter(self._every())

    def __len__(self) -> int:
        return len(self._every())

    def items(self) -> ItemsView[str, EntryT]:
        return self._every().items()

    def values(self) -> ValuesView[EntryT]:
        return self._every().values()

    def __repr__(self) -> str:
        return f"Entries({self._every()!r})"
