"""A MUNGE credential of uid 0: root on any host that holds the cluster's key makes one with
a plain `munge -n`, and a monitor with an account of that name (a `root` made by
createsuperuser is common, and staff) must not open it to every such host. Decoded by a
stand-in unmunge that answers as the real one does for root's credential."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from clusterwatch.monitor.core import munge_auth
from clusterwatch.monitor.core.refusals import Refusal

pytestmark = pytest.mark.django_db
CREDENTIAL = "MUNGE:AwQDAACm9uXvY2x1c3Rlcndh:"


def stand_in(tmp_path: Path, uid: int) -> dict[str, str]:
    program = tmp_path / "unmunge"
    program.write_text("#!/bin/sh\ncat >/dev/null\n"
                       f"printf 'STATUS: 0\\nUID: {uid}\\nGID: {uid}\\nLENGTH: 0\\n'\n")
    program.chmod(0o755)
    return {"CLUSTERWATCH_MUNGE": "1", "CLUSTERWATCH_UNMUNGE": str(program)}


def test_a_credential_of_uid_0_proves_no_one_even_where_an_account_root_exists(
        tmp_path: Path) -> None:
    User.objects.create_superuser("root", password=None)
    User.objects.create_user("alice", password=None)
    names = {0: "root", 1000: "alice"}
    header = f"MUNGE {CREDENTIAL}"
    assert munge_auth.authenticate(header, stand_in(tmp_path, 1000),
                                   name_of=names.get).username == "alice"
    with pytest.raises(Refusal) as refused:
        munge_auth.authenticate(header, stand_in(tmp_path, 0), name_of=names.get)
    assert refused.value.status == 403 and "uid 0" in str(refused.value)
