"""GET /api/osg-image-demand/ against a real PostgreSQL holding jobsactive4: the counts checked
against Python over the inserted rows and against a query written here, every access path,
bad parameters, the database down."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import pytest
from django.test import Client

from clusterwatch.loopback.postgres import Postgres
from clusterwatch.loopback.services import free_port
from clusterwatch.monitor.ingest import tokens
from clusterwatch.monitor.panda.panda_settings import PandaDatabase
from clusterwatch.monitor.usage import api_tokens
from tests.monitor.panda.job_tables import insert_jobs, job
from tests.monitor.panda.panda_tables import configure, fresh_database, superuser

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
URL = "/api/osg-image-demand/"
NOW = dt.datetime(2026, 12, 1, 12, 0)
IMAGES = ["/cvmfs/unpacked.cern.ch/registry.hub.docker.com/eic/jug_xl:nightly",
          "/cvmfs/unpacked.cern.ch/registry.hub.docker.com/eic/jug_xl:25.01.0-stable",
          "docker://eic/jug_xl:nightly ", None, "it's; DROP TABLE x --"]


def scenario(seed: int, count: int) -> list[dict[str, Any]]:
    """Jobs of every status, memory (0: not given), cores (NULL and 0: one) and image."""
    pick = random.Random(seed)
    return [job(9000 + n, pick.choice(["activated"] * 4 + ["running", "starting", "sent"]),
                "BNL_PanDA_1", NOW, minramcount=pick.choice([0, 1000, 2000, 4096, 4097, 8000]),
                corecount=pick.choice([None, 0, 1, 2, 8]), container_name=pick.choice(IMAGES))
            for n in range(count)]


def expected(jobs: list[dict[str, Any]], memory_mb: int, cores: int) -> dict[Optional[str], int]:
    """The answer written independently: Python over the rows as inserted."""
    return dict(Counter(row["container_name"] for row in jobs
                        if row["jobstatus"] == "activated" and row["minramcount"] <= memory_mb
                        and (row["corecount"] or 1) <= cores))


# Written apart from image_demand.QUERY, in other terms: a job with no core count or 0 cores
# is a one-core job, and a slot has at least one core, so only a stated count can exceed it.
INDEPENDENT = """SELECT container_name, count(pandaid) FROM doma_panda.jobsactive4
 WHERE jobstatus IN ('activated') AND NOT minramcount > %(memory)s
   AND (corecount IS NULL OR corecount <= %(cores)s) GROUP BY 1"""


def independently(database: PandaDatabase, memory_mb: int, cores: int
                  ) -> dict[Optional[str], int]:
    with superuser(database) as connection:
        rows = connection.execute(INDEPENDENT, {"memory": memory_mb, "cores": cores})
        return {image: int(count) for image, count in rows.fetchall()}


def test_it_counts_the_activated_jobs_that_fit_per_exact_image(
    operator: Client, panda: PandaDatabase,
) -> None:
    jobs = scenario(seed=12, count=400)
    insert_jobs(panda, "jobsactive4", jobs)
    for memory_mb, cores in ((4096, 1), (4097, 8), (1, 1), (999999, 2)):
        response = operator.get(URL, {"memory_mb": memory_mb, "cores": cores})
        assert response.status_code == 200 and response["Content-Type"] == "application/json"
        answer = response.json()
        assert {one["image"]: one["jobs"] for one in answer["images"]} == expected(
            jobs, memory_mb, cores) == independently(panda, memory_mb, cores)
        assert answer["activated_jobs"] == sum(expected(jobs, memory_mb, cores).values())
        assert (answer["memory_mb"], answer["cores"]) == (memory_mb, cores)
        counts = [one["jobs"] for one in answer["images"]]
        assert counts == sorted(counts, reverse=True)


def test_an_empty_queue_is_an_empty_answer(operator: Client, panda: PandaDatabase) -> None:
    answer = operator.get(URL, {"memory_mb": "2000", "cores": "1"}).json()
    assert answer["images"] == [] and answer["activated_jobs"] == 0


@pytest.mark.parametrize("query", [
    {}, {"cores": "1"}, {"memory_mb": "4096"}, {"memory_mb": "", "cores": "1"},
    {"memory_mb": "-1", "cores": "1"}, {"memory_mb": "0", "cores": "1"},
    {"memory_mb": "4096", "cores": "0"}, {"memory_mb": "4096.5", "cores": "1"},
    {"memory_mb": "1e4", "cores": "1"}, {"memory_mb": " 4096", "cores": "1"},
    {"memory_mb": "٤٠٩٦", "cores": "1"}, {"memory_mb": "99999999999999999999", "cores": "1"},
    {"memory_mb": "17000000", "cores": "1"}, {"memory_mb": "4096", "cores": "5000"},
    {"memory_mb": "4096; DROP TABLE jobsactive4", "cores": "1"},
])
def test_it_refuses_bad_parameters(
    operator: Client, panda: PandaDatabase, query: dict[str, str],
) -> None:
    response = operator.get(URL, query)
    assert response.status_code == 400
    assert "must be a whole number" in response.json()["error"] or "is required" in \
        response.json()["error"]


def test_it_refuses_anonymous_callers_and_host_tokens(
    client: Client, panda: PandaDatabase, django_user_model: Any,
) -> None:
    query = {"memory_mb": "4096", "cores": "1"}
    assert client.get(URL, query).status_code == 403
    host_token = tokens.create(["pandaharvester01"])[1]
    assert client.get(URL, query, HTTP_AUTHORIZATION=f"Bearer {host_token}").status_code == 403
    user = django_user_model.objects.create_user("allocator")
    usage_token = api_tokens.create(user)[1]
    answered = client.get(URL, query, HTTP_AUTHORIZATION=f"Bearer {usage_token}")
    assert answered.status_code == 200 and answered.json()["images"] == []
    assert client.post(URL, query, HTTP_AUTHORIZATION=f"Bearer {usage_token}"
                       ).status_code == 405


def test_a_database_that_is_down_is_503(
    operator: Client, server: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure(dataclasses.replace(fresh_database(server), port=free_port()), tmp_path,
              monkeypatch)
    response = operator.get(URL, {"memory_mb": "4096", "cores": "1"})
    assert response.status_code == 503
    assert response.json()["error"].startswith(
        "the PanDA database could not be read: OperationalError: connection failed")


def test_a_missing_table_is_503_and_the_view_off_is_404(
    operator: Client, server: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure(fresh_database(server), tmp_path, monkeypatch)  # no job tables
    missing = operator.get(URL, {"memory_mb": "4096", "cores": "1"})
    assert missing.status_code == 503 and "UndefinedTable" in missing.json()["error"]
    monkeypatch.delenv("CLUSTERWATCH_PANDA_DATABASE_URL")
    off = operator.get(URL, {"memory_mb": "4096", "cores": "1"})
    assert off.status_code == 404 and "CLUSTERWATCH_PANDA_DATABASE_URL" in off.json()["error"]


def test_a_job_with_the_ddls_defaults_fits_every_slot_under_no_image(
    operator: Client, panda: PandaDatabase,
) -> None:
    # jobstatus defaults to activated, minramcount to 0 (not given), corecount to NULL (one)
    insert_jobs(panda, "jobsactive4", [{"pandaid": 1}])
    answer = operator.get(URL, {"memory_mb": "1", "cores": "1"}).json()
    assert answer["images"] == [{"image": None, "jobs": 1}]


def test_a_kept_connection_that_broke_is_replaced_without_an_error(
    operator: Client, panda: PandaDatabase,
) -> None:
    insert_jobs(panda, "jobsactive4", [job(1, "activated", "BNL_PanDA_1", NOW,
                                           container_name="img")])
    query = {"memory_mb": "4096", "cores": "1"}
    assert operator.get(URL, query).json()["images"] == [{"image": "img", "jobs": 1}]
    with superuser(panda) as connection:  # as a server restart or an idle timeout would
        ended = connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name "
            "= 'clusterwatch-remote-harvester' AND datname = current_database()").fetchall()
    assert ended == [(True,)]
    again = operator.get(URL, query)
    assert again.status_code == 200 and again.json()["activated_jobs"] == 1
