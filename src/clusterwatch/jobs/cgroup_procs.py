"""A cgroup's `cgroup.procs`, read through its directory held open, and whether the
directory has any subdirectory to list.

`procfs.job_pids` reads the `cgroup.procs` of every cgroup below a job and lists each of
these directories for the cgroups below it, at every collection. Through the directory
held open (O_PATH, see file_reader.HeldFiles), both cost less:

- `cgroup.procs` is opened relative to the held directory (openat: one name looked up
  instead of the whole path). It is still a new opening each time, as cgroup v1 needs: a
  held `cgroup.procs` serves the list it made before for as long as it is read again
  within a second (see FileReader.cgroup_text_once);
- the held directory's stat tells whether a listing can find anything: a directory's link
  count is 2 plus its subdirectories on cgroupfs (kernfs), tmpfs, ext4 and xfs, so 2 says
  there is none, and the listing (an open, a stat, two getdents and a close) is skipped.
  That is trusted only on a filesystem (device) where a listing that found subdirectories
  found exactly as many as the link count said (`listed`): one that does not count them
  (btrfs and overlayfs say 1; a filesystem may as well say 2 whatever a directory holds) is
  listed as before. So is a directory that not everyone may list, whose listing the
  exporter may be refused (and would count).

A held directory stays tied to the cgroup it was opened on, as held cgroup files do: when
that cgroup is removed, `cgroup.procs` is no longer found through it (ENOENT, also once a
cgroup of the same name exists again), and the path is read as before, which reaches the
new cgroup, if any. Whatever fails through the held directory is read by path instead,
so that what is counted as absent or unreadable is what it was before.
"""

from __future__ import annotations

import os
from typing import NamedTuple, Optional

from clusterwatch.jobs.file_reader import FileReader, read_file

_READ_BY_ALL = 0o444
# The link count of a directory without subdirectories (see the module's docstring).
_NO_SUBDIRECTORIES = 2


class ProcsReading(NamedTuple):
    text: Optional[str]  # None: absent, or unreadable (then counted)
    unreadable: bool
    leaf: bool  # surely no subdirectory now: nothing to list
    # The held directory's link count and device, read just after cgroup.procs (for
    # CgroupProcs.listed); None when it was read by path.
    links: Optional[int] = None
    device: Optional[int] = None


class CgroupProcs:
    """Reads `cgroup.procs` files for `procfs.job_pids`, and learns which filesystems count
    a directory's subdirectories in its link count."""

    def __init__(self, files: FileReader) -> None:
        self.files = files
        # Devices on which the last listing that found subdirectories agreed with the link
        # count: there a link count of 2 means no subdirectory.
        self._counting_devices: set[int] = set()

    def read(self, directory: str) -> ProcsReading:
        """`directory`/cgroup.procs now, as FileReader.cgroup_text_once reads it, and whether
        the directory surely has no subdirectory."""
        files = self.files
        held = files.held
        if held is not None:
            try:
                dir_fd = held.directory(directory)
                if dir_fd is not None:
                    text = read_file("cgroup.procs", dir_fd).decode("ascii", "replace")
                    info = os.fstat(dir_fd)
                    links, device = info.st_nlink, info.st_dev
                    leaf = (links == _NO_SUBDIRECTORIES
                            and device in self._counting_devices
                            and info.st_mode & _READ_BY_ALL == _READ_BY_ALL)
                    return ProcsReading(text, False, leaf, links, device)
            except OSError:
                # Gone, replaced, not a directory, refused: the path says which, as before;
                # the next collection opens the directory again.
                held.release(directory)
        by_path, unreadable = files.cgroup_text_once(directory + "/cgroup.procs")
        return ProcsReading(by_path, unreadable, False)

    def listed(self, reading: ProcsReading, subdirectories: int) -> None:
        """The directory of `reading` was listed and had `subdirectories`: whether its
        filesystem counts them in the link count (a directory found without any says
        nothing either way)."""
        if reading.device is None:
            return
        if reading.links != _NO_SUBDIRECTORIES + subdirectories:
            self._counting_devices.discard(reading.device)
        elif subdirectories:
            self._counting_devices.add(reading.device)
