"""Open a file for reading only when it is a regular file, without ever blocking.

Every file the reporter reads lives in a directory someone else can reach (the state
directory on an NFS home, the log directory): a named pipe, a device or a socket put in a
file's place must not hang a cron run that holds the state lock (opening a FIFO waits for a
writer; reading /dev/zero through a symlink never ends). O_NONBLOCK makes the open itself
return at once, and the open file is checked with fstat, so the file checked is the file
read. The clusterwatch package has its own copy of this rule (clusterwatch.regular_file);
the reporter imports nothing outside itself (see the package docstring).

Python 3.6 compatible, standard library only.
"""

import errno
import os
import stat
from typing import IO

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """The path names a directory, a FIFO, a device or a socket, not a file."""


def open_regular(path: str) -> IO[bytes]:
    """`path` opened for binary reading; OSError (NotRegularFile when it is no regular
    file, with strerror saying so) instead of blocking or reading without end."""
    fd = os.open(path, _FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file `path`; OSError (EFBIG) when it holds more than
    `limit` bytes, so a file put in a template's place cannot make a run read without end."""
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, "larger than {} bytes".format(limit), path)
    return data
