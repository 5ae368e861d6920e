"""Fixtures of the reporter's tests (helpers to import: *_support.py here, tests/support/)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter.buffer import Buffer
from tests.components import need_binary
from tests.support.tls import make_ca, make_server_cert

from .delivery_support import Clock
from .pilot_dispatch_support import FIXTURES


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def buffer(tmp_path: Path, clock: Clock) -> Buffer:
    return Buffer(str(tmp_path / "state"), clock=clock)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A throwaway CA, a certificate it signed for the loopback monitor, and an impostor's
    certificate signed by another CA; made once per run."""
    openssl = need_binary("openssl")
    root = tmp_path_factory.mktemp("pki")
    ca = make_ca(root, "ca", openssl)
    other = make_ca(root, "other-ca", openssl)
    return {
        "ca": ca,
        "server": make_server_cert(ca, root, "server", openssl),
        "impostor": make_server_cert(other, root, "impostor", openssl),
    }


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """The fixture directory copied, `@TEMPLATES@` replaced by the copy's absolute path."""
    where = tmp_path / "templates"
    shutil.copytree(FIXTURES, where)
    for path in where.iterdir():
        path.write_text(path.read_text().replace("@TEMPLATES@", str(where)))
    (where / "a-directory.sdf").mkdir()
    return where
