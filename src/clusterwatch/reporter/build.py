"""Build the reporter as one zipapp file: `clusterwatch reporter build --output FILE`.

The archive holds `clusterwatch/__init__.py`, the `clusterwatch/reporter` package (its
modules and the record schema) and a two-line `__main__.py` that runs the package's own
`__main__`, and nothing else, so what runs on a harvester host is exactly the
standard-library-only code that the Python 3.6 checks cover, with the same exit statuses.
"""

import os
import shutil
import stat
import tempfile
import zipapp

INTERPRETER = "/usr/bin/env python3"
PACKAGE_FILES = (".py", ".json")
# The archive's entry point runs the package's own `__main__` (which exits with main()'s
# status), so the zipapp and `python -m clusterwatch.reporter` are one program. zipapp's
# `main=` option would not do: the `__main__.py` it writes calls main() and drops the
# returned status, so cron would see 0 for every failure.
ARCHIVE_MAIN = (
    "import runpy\n"
    "runpy.run_module(\"clusterwatch.reporter\", run_name=\"__main__\", alter_sys=True)\n"
)


def build(output: str, interpreter: str = INTERPRETER) -> str:
    """Write the zipapp to `output` (atomically, mode 755); return its path."""
    reporter_dir = os.path.dirname(os.path.abspath(__file__))
    package_dir = os.path.dirname(reporter_dir)
    with tempfile.TemporaryDirectory(prefix="reporter-build-") as staging:
        target_pkg = os.path.join(staging, "clusterwatch")
        target_reporter = os.path.join(target_pkg, "reporter")
        os.makedirs(target_reporter)
        shutil.copy2(os.path.join(package_dir, "__init__.py"), target_pkg)
        for name in sorted(os.listdir(reporter_dir)):
            if name.endswith(PACKAGE_FILES) and name != "build.py":
                shutil.copy2(os.path.join(reporter_dir, name), target_reporter)
        with open(os.path.join(staging, "__main__.py"), "w") as entry:
            entry.write(ARCHIVE_MAIN)
        out_dir = os.path.dirname(os.path.abspath(output)) or "."
        fd, tmp = tempfile.mkstemp(prefix=".reporter-", suffix=".pyz", dir=out_dir)
        os.close(fd)
        try:
            zipapp.create_archive(staging, target=tmp, interpreter=interpreter)
            # An executable program, like the rest of ~/.local/bin; it holds no secret.
            os.chmod(tmp, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP  # noqa: S103
                     | stat.S_IROTH | stat.S_IXOTH)
            os.replace(tmp, output)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    return output
