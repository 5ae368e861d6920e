"""Where the reading of one log stands between two runs: a typed position, and its JSON form
in the state file's `logs` part.

The JSON form is the one every reporter version has written, so a state file from an older
run loads unchanged:

- `{"dev", "inode", "offset", "fp", "fp_len", "mtime_ns", "size", "known"}`: the file being
  read (device, inode, the hash and length of its first up to 256 bytes, its modification
  time and size), the position after the last complete line counted, and the identities of
  the log's rotated generations that are read or older (see log_generations);
- `{"offset": 0, "known"}`: the log did not exist at the previous run, so whatever appears
  is read from the start;
- `{}`: nothing saved (a first run).

`known` is absent from states written before generations were known, `mtime_ns` and `size`
may be; the reader then falls back on older rules (see tail and rotated_read).

Python 3.6 compatible, standard library only (see the package docstring).
"""

from typing import Any, Dict, List, NamedTuple, Optional


class FileMark(NamedTuple):
    """The file a position is in, as it was at the previous run: how it is known again (an
    inode alone is not an identity: compressing a rotated file frees it for the new log)."""

    dev: int
    inode: int
    fp: str  # sha256 hex digest of the first `fp_len` bytes
    fp_len: int
    mtime_ns: Optional[int]
    size: Optional[int]


class LogPosition(object):
    """One log's saved position: `offset` in `file`, or, with no `file`, a log that did not
    exist at the previous run. `known` is None in a state from before generations were
    known."""

    __slots__ = ("file", "known", "offset")

    def __init__(self, offset: int, known: Optional[List[str]],
                 file: Optional[FileMark] = None) -> None:
        self.offset = offset
        self.known = known
        self.file = file

    def __repr__(self) -> str:
        return "LogPosition({!r})".format(self.to_json())

    def with_known(self, known: List[str]) -> "LogPosition":
        return LogPosition(self.offset, known, self.file)

    def to_json(self) -> Dict[str, Any]:
        """The state file's form; keys that were absent when loaded stay absent."""
        data = {"offset": self.offset}  # type: Dict[str, Any]
        mark = self.file
        if mark is not None:
            data.update(dev=mark.dev, inode=mark.inode, fp=mark.fp, fp_len=mark.fp_len)
            if mark.mtime_ns is not None:
                data["mtime_ns"] = mark.mtime_ns
            if mark.size is not None:
                data["size"] = mark.size
        if self.known is not None:
            data["known"] = self.known
        return data

    @classmethod
    def from_json(cls, data: Any) -> Optional["LogPosition"]:
        """The position `data` holds, or None when it holds none that can be used ({}, a
        damaged entry): the log is then read as on a first run."""
        if not isinstance(data, dict) or not data:
            return None
        offset = _natural(data.get("offset"))
        if offset is None:
            return None
        known = data.get("known")
        known = known if isinstance(known, list) else None
        if "inode" not in data:
            return cls(0, known)  # absent at the previous run: read from the start
        dev, inode, fp_len = (_natural(data.get(key)) for key in ("dev", "inode", "fp_len"))
        fp = data.get("fp")
        if dev is None or inode is None or fp_len is None or not isinstance(fp, str):
            return None
        if offset > 0 and fp_len == 0:
            return None  # lines counted in a file with no head: nothing can find it again
        mark = FileMark(dev, inode, fp, fp_len, _integer(data.get("mtime_ns")),
                        _integer(data.get("size")))
        return cls(offset, known, mark)


def is_position(data: Any) -> bool:
    """Whether `data` is a `logs` entry a reporter writes ({} when it had none to give)."""
    return data == {} or LogPosition.from_json(data) is not None


def position_json(position: Optional[LogPosition]) -> Dict[str, Any]:
    """The state file's entry for `position` ({} for none)."""
    return position.to_json() if position is not None else {}


def _natural(value: Any) -> Optional[int]:
    number = _integer(value)
    return number if number is not None and number >= 0 else None


def _integer(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
