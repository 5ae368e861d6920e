"""Strings every database stores: NUL characters and lone surrogates replaced, and counted.

Log text is data. A NUL that a crashing writer left in a harvester log, or a file name that
is not UTF-8 (os.listdir hands it over with lone surrogates), is valid JSON but no text a
database stores (PostgreSQL refuses both, so the monitor refuses the record with 400, and a
refused record is set aside with the whole interval in it). Each such character becomes
U+FFFD here, in keys as in values, and the record's `characters_replaced` says how many and
where, so the rest of the record arrives and nothing is changed silently.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import re
from typing import Any, Callable, Dict, List

REPLACEMENT = "\ufffd"
FIELD = "characters_replaced"
MAX_WHERE = 20  # paths listed; the count covers them all

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# In encoded JSON only an escape can carry either character (json.dumps escapes them).
RISKY_JSON = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


class _Tally(object):
    def __init__(self) -> None:
        self.count = 0
        self.where: List[str] = []

    def repair(self, text: str, path: Callable[[str], str]) -> str:
        """`text` made storable; `path(repaired text)` names where, for the record."""
        repaired, replaced = _UNSTORABLE.subn(REPLACEMENT, text)
        if replaced:
            self.count += replaced
            if len(self.where) < MAX_WHERE:
                self.where.append(path(repaired))
        return repaired


def make_storable(record: Dict[str, Any]) -> Dict[str, Any]:
    """`record` with every unstorable character replaced and the replacements counted in
    `characters_replaced` (`count`, `where`: the first dotted paths); `record` itself when
    there was none."""
    tally = _Tally()
    repaired: Dict[str, Any] = _clean(record, "", tally)
    if not tally.count:
        return record
    repaired[FIELD] = {"count": tally.count, "where": tally.where}
    return repaired


def _clean(value: Any, path: str, tally: _Tally) -> Any:
    if isinstance(value, str):
        return tally.repair(value, lambda _: path)
    if isinstance(value, list):
        return [_clean(item, "{}[{}]".format(path, n), tally) for n, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    risky = [key for key in value if _UNSTORABLE.search(key)]
    out: Dict[str, Any] = {}
    for key, item in value.items():
        if not risky or key not in risky:
            out[key] = _clean(item, _join(path, key), tally)
    # Repaired keys last, so that one never takes the place of a key that needed no repair.
    for key in risky:
        name = base = tally.repair(key, lambda repaired: _join(path, repaired))
        n = 2
        while name in out:
            name, n = "{}#{}".format(base, n), n + 1
        out[name] = _clean(value[key], _join(path, name), tally)
    return out


def _join(path: str, key: str) -> str:
    return "{}.{}".format(path, key) if path else key
